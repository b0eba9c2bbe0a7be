/**
 * `weft tap RESOURCE`: live requests seen by the proxies of a workload, through the tap component.
 * The request goes to the API server's service proxy for `weft/weft-tap:8089`, so the caller needs
 * `create` on `services/proxy` there (Kubernetes RBAC decides who may tap, as Linkerd's tap APIService
 * does); the answer streams one line per event until `--limit` requests were shown, every pod's tap
 * ended, or Ctrl-C.
 */
import * as http from "node:http";
import * as https from "node:https";
import type { TapLine } from "../control/tap/event_json.ts";
import { parseTapRequest, TapRequestError } from "../control/tap/request.ts";
import { TAP_PATH } from "../control/tap/server.ts";
import { DEFAULT_CONTROL_PLANE_NAMESPACE } from "../proto/control_plane.ts";
import { Ports } from "../proto/ports.ts";
import type { Kube } from "../manifests/kube.ts";
import { contextNamespace, openKube } from "./connect.ts";
import { type CliContext, type Command, UsageError } from "./context.ts";
import { flagHelp, type FlagSpec, parseFlags } from "./flags.ts";
import { formatLine, type TapOutput } from "./tap_format.ts";

export const TAP_FLAGS: readonly FlagSpec[] = [
  { name: "namespace", short: "n", help: "namespace of the resource", default: "the context's" },
  { name: "to", help: "only requests to this resource (deploy|sts|ds|job|po/NAME, ns/NAME)" },
  { name: "to-namespace", help: "namespace of the --to resource", default: "--namespace" },
  { name: "path", help: "only requests whose path starts with this" },
  { name: "method", help: "only requests with this HTTP method" },
  { name: "authority", help: "only requests with this :authority" },
  { name: "max-rps", help: "requests per second shown at most", default: "100" },
  { name: "limit", help: "end after this many requests", default: "none: until Ctrl-C" },
  { name: "output", short: "o", help: "text, wide (adds resources and identities) or json", default: "text" },
  { name: "kubeconfig", help: "kubeconfig file", default: "$KUBECONFIG, else ~/.kube/config" },
];

const USAGE = `usage: weft tap (deploy|sts|ds|job|po|ns)/NAME [flags]\n${flagHelp(TAP_FLAGS)}`;

/**
 * Filters Linkerd users may try that this tap cannot honour: the proxies attach no route labels to tap
 * events, so a route match would never fire; refused with what to use instead, not taken silently.
 */
const UNSUPPORTED: Record<string, string> = {
  route: "tap cannot filter by route (tap events carry no route labels); use --path, --method or --authority",
  "route-label":
    "tap cannot filter by route label (tap events carry no route labels); use --path, --method or --authority",
};

function refuseUnsupported(args: readonly string[]): void {
  for (const a of args) {
    if (a === "--") return;
    const m = /^--([a-z-]+)(=|$)/.exec(a);
    if (m && UNSUPPORTED[m[1]]) throw new UsageError(`--${m[1]}: ${UNSUPPORTED[m[1]]}`);
  }
}

export interface TapArgs {
  /** The tap API's request body. */
  body: Record<string, unknown>;
  output: TapOutput;
}

function positive(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || n <= 0) {
    throw new UsageError(`--${flag}: "${text}" is not a positive number`);
  }
  return n;
}

/** The flags as the tap API's request, checked with the component's own validation. */
export function parseTapArgs(args: readonly string[], defaultNamespace: () => string): TapArgs {
  refuseUnsupported(args);
  const f = parseFlags(args, TAP_FLAGS);
  if (f.positionals.length !== 1) {
    throw new UsageError(
      f.positionals.length === 0
        ? "which resource? e.g. weft tap deploy/web -n emojivoto (deploy, sts, ds, job, po or ns)"
        : `one resource only, got ${f.positionals.join(" ")}`,
    );
  }
  const output = f.values.get("output") ?? "text";
  if (output !== "text" && output !== "wide" && output !== "json") {
    throw new UsageError(`--output: "${output}" is not text, wide or json`);
  }
  const namespace = f.values.get("namespace") ?? defaultNamespace();
  const body: Record<string, unknown> = { namespace, resource: f.positionals[0] };
  const set = (key: string, v: unknown) => v !== undefined && (body[key] = v);
  set("to", f.values.get("to"));
  set("toNamespace", f.values.get("to-namespace"));
  set("path", f.values.get("path"));
  set("method", f.values.get("method"));
  set("authority", f.values.get("authority"));
  set("maxRps", positive(f.values.get("max-rps"), "max-rps"));
  set("limit", positive(f.values.get("limit"), "limit"));
  try {
    parseTapRequest(body);
  } catch (e) {
    if (e instanceof TapRequestError) throw new UsageError(e.message);
    throw e;
  }
  return { body, output };
}

/** The service-proxy path of the tap API in the control plane's namespace. */
export function tapProxyPath(controlPlaneNs = DEFAULT_CONTROL_PLANE_NAMESPACE): string {
  return `/api/v1/namespaces/${controlPlaneNs}/services/http:weft-tap:${Ports.tap}/proxy${TAP_PATH}`;
}

/**
 * POSTs the tap request and hands each line to `onLine` as it arrives. Resolves with the HTTP status and,
 * for a non-2xx answer, its text. `signal` ends the request (the component then cancels the pods' taps).
 */
export async function streamTap(
  kube: Kube,
  body: unknown,
  onLine: (line: TapLine) => void | Promise<void>,
  signal: AbortSignal,
): Promise<{ status: number; text?: string }> {
  const url = new URL(kube.server + tapProxyPath());
  const payload = JSON.stringify(body);
  const ro: https.RequestOptions = {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "Content-Length": String(new TextEncoder().encode(payload).length),
    },
  };
  await kube.kc.applyToHTTPSOptions(ro);
  const mod = url.protocol === "https:" ? https : http;
  return await new Promise((resolve, reject) => {
    const req = mod.request(url, ro, (res) => {
      res.setEncoding("utf8");
      const status = res.statusCode ?? 0;
      let buf = "";
      let chain = Promise.resolve();
      res.on("data", (chunk: string) => {
        buf += chunk;
        if (status < 200 || status >= 300) return;
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const text = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (text.trim() === "") continue;
          let line: TapLine;
          try {
            line = JSON.parse(text);
          } catch {
            reject(new Error(`the tap API sent a line that is not JSON: ${text.slice(0, 200)}`));
            req.destroy();
            return;
          }
          chain = chain.then(() => onLine(line));
        }
      });
      res.on(
        "end",
        () => chain.then(() => resolve(status >= 200 && status < 300 ? { status } : { status, text: buf })),
      );
      res.on("error", (e) => signal.aborted ? chain.then(() => resolve({ status })) : reject(e));
      res.on("aborted", () => signal.aborted && chain.then(() => resolve({ status })));
    });
    const onAbort = () => req.destroy();
    signal.addEventListener("abort", onAbort, { once: true });
    req.on("close", () => signal.removeEventListener("abort", onAbort));
    req.on("error", (e) => {
      if (signal.aborted) resolve({ status: 0 });
      else reject(new Error(`POST ${url.pathname} on ${kube.server}: ${e.message}`));
    });
    req.end(payload);
  });
}

export async function runTap(args: string[], ctx: CliContext): Promise<number> {
  const f = parseFlags(args, TAP_FLAGS);
  if (f.help) {
    await ctx.out(`${USAGE}\n`);
    return 0;
  }
  const kube = openKube(f, ctx);
  const { body, output } = parseTapArgs(args, () => contextNamespace(kube));
  ctx.status(`tapping ${body.resource} in ${body.namespace}…`);
  let events = 0;
  const r = await streamTap(kube, body, async (line) => {
    const { out, err } = formatLine(line, output);
    if (out !== undefined) {
      if (events++ === 0) ctx.status("");
      await ctx.out(`${out}\n`);
    }
    if (err !== undefined) ctx.err(err);
  }, ctx.signal);
  ctx.status("");
  if (r.status === 0 && ctx.signal.aborted) return 0;
  if (r.status < 200 || r.status >= 300) {
    const why = r.status === 503 && /no endpoints available|service unavailable/i.test(r.text ?? "")
      ? "the tap component is not running (deno task deploy installs it)"
      : (r.text ?? "").trim();
    ctx.err(
      `weft tap: ${
        r.status === 403 ? "forbidden (you need create on services/proxy for weft/weft-tap): " : ""
      }${why}`,
    );
    return 1;
  }
  return 0;
}

export const tapCommand: Command = {
  name: "tap",
  summary: "live requests through the proxies' tap API: weft tap deploy/NAME -n NS [--to …] [--limit N]",
  run: runTap,
};
