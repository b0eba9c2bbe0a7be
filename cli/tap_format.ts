/**
 * How `weft tap` prints the tap API's lines, as `linkerd viz tap` does: one line per event,
 * `req|rsp|end id=BASE:STREAM proxy=in|out src=… dst=… tls=…` and then the event's own fields
 * (`:method :authority :path`, `:status latency`, `grpc-status duration response-length`). `wide` adds
 * where each side is (`src_res/src_ns/dst_res/dst_ns`) and the identities the proxy saw; `json` prints
 * each event as one JSON object. Pure: the command decides where the text goes.
 */
import type { TapEventJson, TapLine } from "../control/tap/event_json.ts";

export type TapOutput = "text" | "wide" | "json";

/** gRPC status names, as grpc-go prints them (Linkerd's `grpc-status=OK`). */
const GRPC_CODES = [
  "OK",
  "Canceled",
  "Unknown",
  "InvalidArgument",
  "DeadlineExceeded",
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "ResourceExhausted",
  "FailedPrecondition",
  "Aborted",
  "OutOfRange",
  "Unimplemented",
  "Internal",
  "Unavailable",
  "DataLoss",
  "Unauthenticated",
];

function grpcName(code: number): string {
  return GRPC_CODES[code] ?? `Code(${code})`;
}

/** The side whose TLS the line shows: the client's for inbound, the server's for outbound (Linkerd's rule). */
function tls(e: TapEventJson): string {
  const labels = e.direction === "outbound" ? e.destinationLabels : e.sourceLabels;
  return labels.tls ?? "";
}

function resource(labels: Record<string, string>): string | undefined {
  if (labels.deployment) return `deploy/${labels.deployment}`;
  if (labels.statefulset) return `sts/${labels.statefulset}`;
  if (labels.daemonset) return `ds/${labels.daemonset}`;
  if (labels.pod) return `po/${labels.pod}`;
  return undefined;
}

function wide(e: TapEventJson): string[] {
  const [podNs, podName] = e.pod.split("/");
  // The reporting pod is the destination of an inbound request and the source of an outbound one.
  const self = { res: `po/${podName}`, ns: podNs };
  const peer = e.direction === "outbound" ? e.destinationLabels : e.sourceLabels;
  const peerSide = { res: resource(peer), ns: peer.namespace };
  const [src, dst] = e.direction === "outbound" ? [self, peerSide] : [peerSide, self];
  const out: string[] = [];
  if (src.res) out.push(`src_res=${src.res}`);
  if (src.ns) out.push(`src_ns=${src.ns}`);
  if (dst.res) out.push(`dst_res=${dst.res}`);
  if (dst.ns) out.push(`dst_ns=${dst.ns}`);
  const client = e.sourceLabels.client_id;
  const server = e.destinationLabels.server_id;
  if (client) out.push(`client_id=${client}`);
  if (server) out.push(`server_id=${server}`);
  return out;
}

export function formatEvent(e: TapEventJson, output: TapOutput): string {
  if (output === "json") return JSON.stringify(e);
  const h = e.http;
  const kind = h.kind === "request" ? "req" : h.kind === "response" ? "rsp" : "end";
  // `proxy=in ` is padded to the width of `proxy=out` so columns line up, as Linkerd prints it.
  const dir = e.direction === "inbound" ? "in " : e.direction === "outbound" ? "out" : "?  ";
  const parts = [
    `${kind} id=${h.id}`,
    `proxy=${dir}`,
    `src=${e.source}`,
    `dst=${e.destination}`,
    `tls=${tls(e)}`,
  ];
  switch (h.kind) {
    case "request":
      parts.push(`:method=${h.method}`, `:authority=${h.authority}`, `:path=${h.path}`);
      break;
    case "response":
      parts.push(`:status=${h.status}`, `latency=${h.sinceRequestInitUs}µs`);
      break;
    case "end":
      if (h.grpcStatus !== undefined) parts.push(`grpc-status=${grpcName(h.grpcStatus)}`);
      if (h.resetCode !== undefined) parts.push(`reset-error=${h.resetCode}`);
      parts.push(`duration=${h.sinceResponseInitUs}µs`, `response-length=${h.responseBytes}B`);
      break;
  }
  if (output === "wide") parts.push(...wide(e));
  return parts.join(" ");
}

/** What to print for one API line: to stdout (events) or stderr (errors, how it ended). */
export function formatLine(line: TapLine, output: TapOutput): { out?: string; err?: string } {
  if ("event" in line) return { out: formatEvent(line.event, output) };
  if ("error" in line) return { err: `tap of ${line.error.pod} failed: ${line.error.message}` };
  const e = line.end;
  const why = e.reason === "limit"
    ? `limit of ${e.requests} request(s) reached`
    : e.reason === "pods-ended"
    ? `every pod's tap ended (${e.requests} request(s))`
    : `ended: ${e.message ?? "error"}`;
  return {
    err: `tap ${why}${e.dropped > 0 ? `; ${e.dropped} event(s) dropped because output was slow` : ""}`,
  };
}
