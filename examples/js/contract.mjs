// gpuhealth's wire contract from JavaScript: msgpack messages checked against the published JSON Schemas.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import { decode, encode } from "@msgpack/msgpack";

export const FAMILIES = ["event", "metric", "inventory", "health", "incident", "dlq", "decision"];
export const SCHEMA_HEADER = "Gpuhealth-Schema";
export const SCHEMA_VERSION = "1";
const SCHEMA_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "gpuhealth", "schema");

/** One compiled validator a family, by Ajv's default (draft-07, strict) class: no options needed. */
export function validators(dir = SCHEMA_DIR) {
  const ajv = new Ajv();
  return Object.fromEntries(
    FAMILIES.map((f) => [f, ajv.compile(JSON.parse(readFileSync(join(dir, `${f}.schema.json`), "utf8")))]),
  );
}

/** The family of a subject: gpuhealth.v1.<family>.<node>… */
export function familyOf(subject) {
  return subject.split(".")[2];
}

/**
 * Ajv (like JSON) has no BigInt, so validate the default decoding (times as Numbers, rounded past 2^53, which
 * changes no verdict); use the exact one, with 64-bit integers as BigInt, for anything else.
 */
export function check(validate, data) {
  const ok = validate(decode(data));
  return ok ? [] : validate.errors.filter((e) => e.keyword !== "if"); // "if": Ajv's marker of the failed branch
}

export function decodeExact(data) {
  return decode(data, { useBigInt64: true });
}

/** Times and other 64-bit integers as BigInt: encoded as msgpack integers, never as floats. */
export function encodeExact(message) {
  return encode(message, { useBigInt64: true });
}

/** The KV keys' escape (gpuhealth/subjects.py kv_escape): '=XX' a UTF-8 byte outside [A-Za-z0-9_/-]. */
export function kvUnescape(part) {
  if (part === "=") return "";
  return part.replace(/(?:=[0-9A-F]{2})+/g, (run) =>
    Buffer.from(run.replaceAll("=", ""), "hex").toString("utf8"),
  );
}
