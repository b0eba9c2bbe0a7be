/**
 * Contract test: the messages, fields, enums and RPCs compiled from proto/defs must match, in
 * both directions, the inventories in proto/inventory, which were written from a reading of the
 * upstream linkerd2-proxy-api v0.20 files (and linkerd2-proxy's transport header), not from ours.
 * A renamed, renumbered or retyped field, or a missing message, fails here.
 */
import assert from "node:assert/strict";

const here = new URL(".", import.meta.url).pathname;
const buf = `${here}../tools/codegen/node_modules/.bin/buf`;

interface Field {
  name: string;
  number: number;
  label?: string;
  type: string;
  typeName?: string;
  oneofIndex?: number;
  proto3Optional?: boolean;
}
interface Message {
  name: string;
  field?: Field[];
  nestedType?: Message[];
  enumType?: Enum[];
  oneofDecl?: { name: string }[];
  options?: { mapEntry?: boolean };
  reservedRange?: { start: number; end: number }[];
  reservedName?: string[];
}
interface Enum {
  name: string;
  value?: { name: string; number?: number }[];
}
interface File {
  name: string;
  package?: string;
  messageType?: Message[];
  enumType?: Enum[];
  service?: { name: string; method?: Method[] }[];
}
interface Method {
  name: string;
  inputType: string;
  outputType: string;
  clientStreaming?: boolean;
  serverStreaming?: boolean;
}

async function compiledDescriptors(): Promise<File[]> {
  try {
    await Deno.stat(buf);
  } catch {
    throw new Error(
      `buf is not installed at ${buf}: run 'npm ci --prefix tools/codegen' (or deno task gen:proto)`,
    );
  }
  const out = await new Deno.Command(buf, {
    args: ["build", "--exclude-source-info", "--exclude-imports", "-o", "-#format=json"],
    cwd: here,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`buf build failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(new TextDecoder().decode(out.stdout)).file as File[];
}

function scalar(t: string): string {
  return t.replace(/^TYPE_/, "").toLowerCase();
}

/** Renders the compiled descriptors in the inventory's line format. */
function render(files: File[]): Set<string> {
  const lines = new Set<string>();
  const messages = new Map<string, Message>();
  const collect = (prefix: string, m: Message) => {
    messages.set(`${prefix}.${m.name}`, m);
    for (const n of m.nestedType ?? []) collect(`${prefix}.${m.name}`, n);
  };
  for (const f of files) for (const m of f.messageType ?? []) collect(f.package ?? "", m);

  const typeOf = (fd: Field): string => {
    if (fd.type === "TYPE_MESSAGE" || fd.type === "TYPE_ENUM") {
      const name = (fd.typeName ?? "").replace(/^\./, "");
      const entry = messages.get(name);
      if (entry?.options?.mapEntry) {
        const [k, v] = [entry.field![0], entry.field![1]];
        return `map<${typeOf(k)},${typeOf(v)}>`;
      }
      return name;
    }
    return scalar(fd.type);
  };
  const renderEnum = (fq: string, e: Enum) => {
    for (const v of e.value ?? []) lines.add(`enum ${fq} ${v.name}=${v.number ?? 0}`);
  };
  const renderMessage = (fq: string, m: Message) => {
    if (m.options?.mapEntry) return;
    lines.add(`message ${fq}`);
    for (const fd of m.field ?? []) {
      let extra = "";
      const t = typeOf(fd);
      if (t.startsWith("map<")) extra = " map";
      else if (fd.label === "LABEL_REPEATED") extra = " repeated";
      else if (fd.oneofIndex !== undefined && !fd.proto3Optional) {
        extra = ` oneof:${m.oneofDecl![fd.oneofIndex].name}`;
      }
      lines.add(`${fq} ${fd.number} ${fd.name} ${t}${extra}`);
    }
    for (const r of m.reservedRange ?? []) {
      for (let n = r.start; n < r.end; n++) lines.add(`reserved ${fq} ${n}`);
    }
    for (const n of m.reservedName ?? []) lines.add(`reserved-name ${fq} ${n}`);
    for (const n of m.nestedType ?? []) renderMessage(`${fq}.${n.name}`, n);
    for (const e of m.enumType ?? []) renderEnum(`${fq}.${e.name}`, e);
  };
  for (const f of files) {
    const pkg = f.package ?? "";
    for (const m of f.messageType ?? []) renderMessage(`${pkg}.${m.name}`, m);
    for (const e of f.enumType ?? []) renderEnum(`${pkg}.${e.name}`, e);
    for (const s of f.service ?? []) {
      for (const m of s.method ?? []) {
        const kind = m.clientStreaming
          ? (m.serverStreaming ? "bidi-stream" : "client-stream")
          : (m.serverStreaming ? "server-stream" : "unary");
        const strip = (t: string) => t.replace(/^\./, "");
        lines.add(`rpc ${pkg}.${s.name}/${m.name} ${strip(m.inputType)} ${strip(m.outputType)} ${kind}`);
      }
    }
  }
  return lines;
}

async function inventory(): Promise<Set<string>> {
  const lines = new Set<string>();
  for await (const e of Deno.readDir(`${here}inventory`)) {
    if (!e.name.endsWith(".txt")) continue;
    for (const raw of (await Deno.readTextFile(`${here}inventory/${e.name}`)).split("\n")) {
      const line = raw.replace(/\s+#.*$/, "").trim().replace(/\s+/g, " ");
      if (line && !line.startsWith("#")) lines.add(line);
    }
  }
  return lines;
}

Deno.test("proto/defs matches the upstream v0.20 inventory in both directions", async () => {
  const [compiled, wanted] = await Promise.all([compiledDescriptors().then(render), inventory()]);
  assert.ok(wanted.size > 400, `inventory has only ${wanted.size} lines`);
  const missing = [...wanted].filter((l) => !compiled.has(l)).sort();
  const extra = [...compiled].filter((l) => !wanted.has(l)).sort();
  assert.deepEqual({ missing, extra }, { missing: [], extra: [] });
});

Deno.test("every v0.20 proxy API package is present", async () => {
  const files = await compiledDescriptors();
  const packages = new Set(files.map((f) => f.package));
  for (
    const p of [
      "destination",
      "identity",
      "inbound",
      "outbound",
      "net",
      "meta",
      "http_types",
      "http_route",
      "grpc_route",
      "opaque_route",
      "tls_route",
      "tap",
    ]
  ) assert.ok(packages.has(`io.linkerd.proxy.${p}`), `package io.linkerd.proxy.${p} is missing`);
  assert.ok(packages.has("transport.l5d.io"), "package transport.l5d.io is missing");
});
