// Validates messages given on stdin (msgpack: a list of [family, bin]) and prints one JSON line each: the
// errors, [] when it is valid. The suite's check of the schemas with the validator JavaScript users run.
import { readFileSync } from "node:fs";
import { decode } from "@msgpack/msgpack";
import { check, validators } from "./contract.mjs";

const v = validators();
for (const [family, data] of decode(readFileSync(0))) {
  console.log(JSON.stringify(check(v[family], data)));
}
