/**
 * A client process of `bench:destination`: opens its share of Get streams to the controller on
 * 127.0.0.1, tracks each stream's endpoint set, and reports on stdout when all of its streams of a
 * service have received a generation, so the controller's figures exclude the clients' cost. It
 * is driven by JSON lines on stdin (see plan.ts) and reads nothing else.
 */
import * as grpc from "@grpc/grpc-js";
import process from "node:process";
import { DestinationClient, type Update } from "../../../proto/gen/destination.ts";
import { formatIpv4 } from "../../../proto/ip.ts";
import {
  type ClientPlan,
  expectedIps,
  type FromClient,
  generationOf,
  jsonLines,
  now,
  placeStream,
  replicaOfConnection,
  serviceOf,
  type ToClient,
} from "./plan.ts";

interface Sub {
  svc: number;
  replica: number;
  call: grpc.ClientReadableStream<Update>;
  ips: Set<string>;
  first: boolean;
  reset: string | undefined;
}

const enc = new TextEncoder();
const out = Deno.stdout.writable.getWriter();
let writing = Promise.resolve();
function send(m: FromClient): void {
  const bytes = enc.encode(JSON.stringify(m) + "\n");
  writing = writing.then(() => out.write(bytes));
}

let plan: ClientPlan | undefined;
let conns: DestinationClient[] = [];
const subs: Sub[] = [];
/**
 * This process's streams per (service, replica) key, and how many of them hold each pending
 * generation: a replica's streams are reported apart so each replica's propagation is its own.
 */
const perService = new Map<number, number>();
const keyOf = (svc: number, replica: number) => svc * plan!.ports.length + replica;
const counts = new Map<number, Map<number, number>>();
let opened = 0;
let firsts = 0;
let got: [number, number, number, number][] = [];
let flushing = false;

function report(svc: number, gen: number, replica: number): void {
  got.push([svc, gen, now(), replica]);
  if (flushing) return;
  flushing = true;
  // Batched per event-loop turn; the timestamps are taken on receipt, not on report.
  setTimeout(() => {
    flushing = false;
    send({ type: "got", items: got });
    got = [];
  }, 1);
}

function onUpdate(sub: Sub, u: Update): void {
  const up = u.update;
  let gen: number | undefined;
  if (up?.$case === "add") {
    for (const a of up.value.addrs) {
      const ip = a.addr?.ip?.ip;
      if (ip?.$case !== "ipv4") continue;
      const text = formatIpv4(ip.value);
      sub.ips.add(text);
      gen = generationOf(text) ?? gen;
    }
  } else if (up?.$case === "remove") {
    for (const a of up.value.addrs) {
      if (a.ip?.ip?.$case === "ipv4") sub.ips.delete(formatIpv4(a.ip.ip.value));
    }
  } else if (up?.$case === "noEndpoints") sub.ips.clear();
  if (sub.first) {
    sub.first = false;
    firsts++;
    return;
  }
  if (gen === undefined) return;
  const key = keyOf(sub.svc, sub.replica);
  let c = counts.get(key);
  if (!c) counts.set(key, c = new Map());
  const n = (c.get(gen) ?? 0) + 1;
  if (n < perService.get(key)!) return void c.set(gen, n);
  c.delete(gen);
  report(sub.svc, gen, sub.replica);
}

async function open(streams: number): Promise<void> {
  const p = plan!;
  for (let k = opened; k < streams; k++) {
    const { proc, channel, replica } = placeStream(k, p.procs, p.channels, p.ports.length, p.services);
    if (proc !== p.index) continue;
    const svc = serviceOf(k, p.services);
    const call = conns[channel].get({
      scheme: "",
      path: `svc-${svc}.bench.svc.cluster.local:80`,
      contextToken: "",
    });
    const sub: Sub = { svc, replica, call, ips: new Set(), first: true, reset: undefined };
    perService.set(keyOf(svc, replica), (perService.get(keyOf(svc, replica)) ?? 0) + 1);
    call.on("data", (u: Update) => onUpdate(sub, u));
    call.on("error", (e: grpc.ServiceError) => {
      if (e.code !== grpc.status.CANCELLED || !closing) sub.reset = `${e.code} ${e.details}`;
    });
    subs.push(sub);
  }
  opened = Math.max(opened, streams);
  const until = Date.now() + 120_000;
  while (firsts < subs.length && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  if (firsts < subs.length) throw new Error(`only ${firsts}/${subs.length} streams got their first message`);
  const perReplica = p.ports.map(() => 0);
  for (const s of subs) perReplica[s.replica]++;
  send({ type: "opened", streams: subs.length, perReplica });
}

function verify(gens: number[]): void {
  const p = plan!;
  let converged = 0;
  const lostPerReplica = p.ports.map(() => 0);
  const errors: string[] = [];
  for (const s of subs) {
    const want = expectedIps(s.svc, p.perService, gens[s.svc]);
    const ok = want.size === s.ips.size && [...want].every((ip) => s.ips.has(ip));
    if (ok) converged++;
    else lostPerReplica[s.replica]++;
    if (!ok && errors.length < 3) {
      errors.push(`svc-${s.svc} on replica ${s.replica}: have ${s.ips.size}, want ${want.size}`);
    }
  }
  const resets = subs.filter((s) => s.reset !== undefined).length;
  for (const s of subs) if (s.reset && errors.length < 6) errors.push(`reset: ${s.reset}`);
  const cpu = process.cpuUsage(cpuAtPing);
  send({
    type: "verified",
    streams: subs.length,
    converged,
    lostPerReplica,
    resets,
    errors,
    cpuUs: cpu.user + cpu.system,
  });
}

let closing = false;
let cpuAtPing = process.cpuUsage();
try {
  for await (const m of jsonLines<ToClient>(Deno.stdin.readable)) {
    if (m.type === "init") {
      plan = m.plan;
      const p = m.plan;
      conns = Array.from(
        { length: p.channels },
        // A local subchannel pool per client: separate connections, as separate proxies would open
        // (grpc-js shares one connection among clients of an address otherwise).
        (_, channel) =>
          new DestinationClient(
            `127.0.0.1:${p.ports[replicaOfConnection(p.index, channel, p.channels, p.ports.length)]}`,
            grpc.credentials.createInsecure(),
            {
              "grpc.use_local_subchannel_pool": 1,
            },
          ),
      );
    } else if (m.type === "open") await open(m.streams);
    else if (m.type === "ping") {
      cpuAtPing = process.cpuUsage();
      send({ type: "pong", id: m.id, t: now() });
    } else if (m.type === "verify") verify(m.gens);
    else if (m.type === "close") break;
  }
} catch (e) {
  send({ type: "error", message: String(e) });
}
closing = true;
for (const s of subs) s.call.cancel();
for (const c of conns) c.close();
await writing;
Deno.exit(0);
