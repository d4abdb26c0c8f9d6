// A consumer and a producer of gpuhealth in JavaScript, following only the published contract (README, The wire
// contract): it follows health, events and incidents as the read-only `reader` identity, validating every message
// against its family's schema; publishes one kernel event (an Xid 79) as the node's agent; waits until that event,
// the health state and the incident it causes have come back; then reads the health and inventory buckets.
//
//   npm ci --prefix examples/js
//   NATS_URL=nats://127.0.0.1:4222 NODE=<node> CLUSTER=<cluster> \
//   READER_PASSWORD_FILE=<data-dir>/secrets/reader.password AGENT_PASSWORD_FILE=<data-dir>/secrets/agent-<node>.password \
//   node examples/js/subscriber.mjs
//
// Prints one JSON line a message ({family, subject, errors}) and a summary last; exits 1 if any message was
// invalid or the round trip did not complete within TIMEOUT_S (default 60).
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { connect, headers } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import {
  SCHEMA_HEADER,
  SCHEMA_VERSION,
  check,
  decodeExact,
  encodeExact,
  familyOf,
  kvUnescape,
  validators,
} from "./contract.mjs";

const env = process.env;
const NODE = env.NODE;
const secret = (path) => readFileSync(path, "utf8").trim();
const validate = validators();
const summary = { received: { health: 0, event: 0, incident: 0 }, kv: { health: 0, inventory: 0 }, invalid: 0 };

/** Checks one message against its family's schema (and the header), prints the verdict, returns it decoded. */
function judge(family, subject, data, schemaHeader) {
  const errors = check(validate[family], data);
  if (schemaHeader !== undefined && schemaHeader !== SCHEMA_VERSION) {
    errors.push({ message: `header ${SCHEMA_HEADER}: ${schemaHeader}` });
  }
  if (errors.length) summary.invalid += 1;
  console.log(JSON.stringify({ family, subject, errors }));
  return errors.length ? null : decodeExact(data);
}

/** A ULID (what gpuhealth's ids are): 48 bits of milliseconds, 80 random ones, in Crockford's base 32. */
function ulid(ms) {
  const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  let value = (BigInt(ms) << 80n) | BigInt("0x" + randomBytes(10).toString("hex"));
  let out = "";
  for (let i = 0; i < 26; i++, value >>= 5n) out = alphabet[Number(value & 31n)] + out;
  return out;
}

function xidEvent() {
  const ms = Date.now();
  return {
    type: "kernel",
    id: ulid(ms),
    time: BigInt(ms) * 1_000_000n + 123_456n, // ns as a BigInt: a float time would be dead-lettered
    cluster: env.CLUSTER,
    node: NODE,
    source: "js-example",
    component: "accelerator-nvidia-error-xid",
    kind: "xid",
    xid: 79,
    pci_bus_id: "0000:05:00.0",
    message: "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
  };
}

async function publish(nc, event) {
  const h = headers();
  h.set(SCHEMA_HEADER, SCHEMA_VERSION);
  const subject = `gpuhealth.v1.event.${NODE}.${event.source}`; // node and source already one subject token
  await jetstream(nc).publish(subject, encodeExact(event), { msgID: event.id, headers: h });
}

async function readBucket(nc, bucket, family) {
  const kv = await new Kvm(nc).open(bucket);
  for await (const key of await kv.keys()) {
    const entry = await kv.get(key);
    if (!entry || entry.operation !== "PUT") continue; // deleted or purged
    const value = judge(family, `${bucket}/${key}`, entry.value);
    const parts = key.split(".").map(kvUnescape);
    const named = family === "health" ? [value?.node, value?.component, value?.entity] : [value?.node];
    if (value && named.join("\u0000") !== parts.join("\u0000")) {
      summary.invalid += 1;
      console.log(JSON.stringify({ family, subject: key, errors: [{ message: `key says ${parts}` }] }));
    }
    summary.kv[family] += 1;
  }
}

async function main() {
  const servers = env.NATS_URL ?? "nats://127.0.0.1:4222";
  const reader = await connect({ servers, user: "reader", pass: secret(env.READER_PASSWORD_FILE),
                                 inboxPrefix: "_INBOX.reader" });
  const event = xidEvent();
  const seen = { own: false, health: false, incident: false };
  for (const family of Object.keys(summary.received)) {
    reader.subscribe(`gpuhealth.v1.${family}.>`, {
      callback: (err, msg) => {
        if (err) throw err;
        summary.received[family] += 1;
        const value = judge(familyOf(msg.subject), msg.subject, msg.data, msg.headers?.get(SCHEMA_HEADER));
        if (value?.id === event.id) seen.own = true;
        if (value?.pci_bus_id === event.pci_bus_id && family !== "event") seen[family] = true;
      },
    });
  }
  await reader.flush(); // subscribed before anything is published

  const agent = await connect({ servers, user: `agent-${NODE}`, pass: secret(env.AGENT_PASSWORD_FILE),
                                inboxPrefix: `_INBOX.${NODE}` });
  await publish(agent, event);
  const deadline = Date.now() + 1000 * Number(env.TIMEOUT_S ?? 60);
  while (!(seen.own && seen.health && seen.incident) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await readBucket(reader, "gpuhealth_health", "health");
  await readBucket(reader, "gpuhealth_inventory", "inventory");
  await agent.close();
  await reader.close();
  const complete = seen.own && seen.health && seen.incident;
  console.log(JSON.stringify({ ...summary, seen, published: { id: event.id, time: String(event.time) } }));
  process.exitCode = summary.invalid === 0 && complete ? 0 : 1;
}

await main();
