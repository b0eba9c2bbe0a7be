/**
 * The tap component's HTTP API (port 8089), reached by the CLI through the Kubernetes API server's
 * service proxy, so the caller's own RBAC (`services/proxy` on weft-tap) decides who may tap:
 *
 *   POST /apis/tap   body: the tap request (request.ts)   → 200 application/x-ndjson, one TapLine per line
 *
 * A request from a meshed pod (one that carries `l5d-client-id`) is refused with 403 unless its identity is one of
 * `meshedClients` (the dashboard): taps must come through the API server, whose caller RBAC authorized. Bad requests get a 4xx whose text names what is wrong; a tap of a resource without tappable pods is a
 * 404 naming why. At most `maxSessions` taps run at once (429 beyond). The stream ends with the tap
 * (limit, pods ended) or when the reader disconnects, which cancels every Observe stream.
 */
import type { TapLine } from "./event_json.ts";
import { parseTapRequest, TapRequestError } from "./request.ts";
import { type Observe, tapSession } from "./session.ts";
import { type PodLike, selectTargets } from "./targets.ts";

export const TAP_PATH = "/apis/tap";
/** Set by this pod's proxy to the mTLS identity of a meshed caller (Linkerd's header). */
const CLIENT_ID_HEADER = "l5d-client-id";
const MAX_BODY_BYTES = 16 * 1024;

export interface TapApiOptions {
  pods: () => readonly PodLike[];
  /** Undefined when the pod cache can answer; otherwise why not (503). */
  notReady: () => string | undefined;
  controlPlaneNamespace: string;
  observe: Observe;
  maxSessions?: number;
  /** Meshed identities admitted besides the API server (--meshed-clients; the dashboard's). */
  meshedClients?: readonly string[];
  queueCapacity?: number;
  /** An empty line is written after this long without one, so a reader that left is noticed (default 5 s). */
  heartbeatMs?: number;
  log: (message: string) => void;
}

function text(status: number, message: string): Response {
  return new Response(`${message}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

async function readBody(req: Request): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw new TapRequestError(`body larger than ${MAX_BODY_BYTES} bytes`);
  // Read chunk by chunk: a chunked body without a length is cut off at the cap, never buffered whole.
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body?.getReader();
  while (reader) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw new TapRequestError(`body larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const buf = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    buf.set(c, off);
    off += c.length;
  }
  return new TextDecoder().decode(buf);
}

/** The request handler (Deno.serve's), with a count of the taps running. */
export function tapApi(
  o: TapApiOptions,
): { handler: (req: Request) => Promise<Response>; active: () => number } {
  let active = 0;
  let serial = 0;
  const max = o.maxSessions ?? 16;
  const heartbeatMs = o.heartbeatMs ?? 5000;
  const handler = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    if (url.pathname !== TAP_PATH) {
      return text(404, `not found: ${url.pathname} (the tap API is POST ${TAP_PATH})`);
    }
    if (req.method !== "POST") return text(405, `${req.method} ${TAP_PATH}: use POST`);
    // The API server is not meshed; a meshed pod is (its proxy's l5d-client-id cannot be forged: the pod's
    // proxy strips what a client sends). Only requests through the API server carry the caller's RBAC.
    const meshedCaller = req.headers.get(CLIENT_ID_HEADER);
    if (meshedCaller && !o.meshedClients?.includes(meshedCaller)) {
      return text(
        403,
        `the tap API answers the Kubernetes API server's service proxy only, not ${meshedCaller}: use weft tap`,
      );
    }
    let tap;
    try {
      const body = await readBody(req);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch (e) {
        throw new TapRequestError(`the body is not JSON: ${(e as Error).message}`);
      }
      tap = parseTapRequest(json);
    } catch (e) {
      if (e instanceof TapRequestError) return text(400, `bad tap request: ${e.message}`);
      throw e;
    }
    const why = o.notReady();
    if (why) return text(503, `tap is not ready: ${why}`);
    const sel = selectTargets(o.pods(), tap.target, o.controlPlaneNamespace);
    if (sel.kind === "none") return text(404, sel.message);
    if (active >= max) return text(429, `${active} taps are running, the most this component serves at once`);
    active++;
    const what = `tap #${++serial} of ${tap.target.kind} ${tap.target.namespace}/${tap.target.name}`;
    o.log(`${what} started: ${sel.targets.length} pod(s)`);
    const lines = tapSession({
      request: tap,
      targets: sel.targets,
      observe: o.observe,
      signal: req.signal,
      queueCapacity: o.queueCapacity,
    });
    const enc = new TextEncoder();
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      active--;
      o.log(`${what} ended`);
    };
    // A tap whose filters match nothing writes nothing, and a peer that left is only seen on a write (the
    // API server's proxy and the pod's proxy sit between): an empty line after `heartbeatMs` of silence
    // (NDJSON readers skip it) makes a departed reader end the tap within a few seconds.
    let pending: Promise<IteratorResult<TapLine>> | undefined;
    const HEARTBEAT = Symbol("heartbeat");
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          pending ??= lines.next();
          let timer: ReturnType<typeof setTimeout> | undefined;
          const r = await Promise.race([
            pending,
            new Promise<typeof HEARTBEAT>((res) => timer = setTimeout(() => res(HEARTBEAT), heartbeatMs)),
          ]);
          clearTimeout(timer);
          if (r === HEARTBEAT) {
            controller.enqueue(enc.encode("\n"));
            return;
          }
          pending = undefined;
          if (r.done) {
            release();
            controller.close();
            return;
          }
          controller.enqueue(enc.encode(`${JSON.stringify(r.value satisfies TapLine)}\n`));
        } catch (e) {
          release();
          controller.error(e);
        }
      },
      async cancel() {
        release();
        await lines.return(undefined);
      },
    }, { highWaterMark: 0 });
    return new Response(body, {
      headers: { "content-type": "application/x-ndjson", "cache-control": "no-store" },
    });
  };
  return { handler, active: () => active };
}
