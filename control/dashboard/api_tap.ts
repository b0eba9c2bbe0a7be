/**
 * `/api/tap/rows?ns=&resource=&to=&toNamespace=&path=&method=&authority=&status=&identity=&limit=&duration=`:
 * the Live tap page's stream. The tap runs through `weft tap`'s own client (the API server's service proxy to
 * weft-tap, with the dashboard's ServiceAccount), and its lines go out as NDJSON rows, one per request
 * (tap_rows.ts):
 *
 *   {"row": {...}}    a request with its response (again, updated, when it ends)
 *   {"error": {...}}  one pod's tap failed; the others go on
 *   {"end": {"reason", "rows", "dropped", "status"?, "message"?}}   the last line
 *
 * Bounded: at most `limit` requests (the tap API ends there) and `duration` seconds; rows wait in a queue of
 * `queueCapacity` for a slow viewer, beyond which they are dropped and counted. The upstream tap is aborted
 * when the viewer goes away (the request's signal, or the stream cancelled); an empty line after
 * `heartbeatMs` (1 s) of silence makes a viewer that left behind a port-forward noticed on the next write.
 */
import type { TapLine } from "../tap/event_json.ts";
import { ApiError, type ApiRoute } from "./server.ts";
import { parseTapQuery, TapQueryError, TapRows } from "./tap_rows.ts";

/** `streamTap` (cli/tap.ts) bound to the dashboard's Kube; a loopback stand-in in tests. */
export type OpenTap = (
  body: unknown,
  onLine: (line: TapLine) => void,
  signal: AbortSignal,
) => Promise<{ status: number; text?: string }>;

export interface TapRowsOptions {
  open: OpenTap;
  log: (line: string) => void;
  heartbeatMs?: number;
  queueCapacity?: number;
}

export type RowsEnd = {
  reason: "limit" | "pods-ended" | "duration" | "refused" | "error";
  rows: number;
  dropped: number;
  status?: number;
  message?: string;
};

export function tapRowsRoute(o: TapRowsOptions): ApiRoute {
  // Short: the write is how a viewer that left (behind a port-forward) is noticed, and each second it runs on
  // costs the proxies a tap.
  const heartbeatMs = o.heartbeatMs ?? 1000;
  const capacity = o.queueCapacity ?? 1000;
  return (p, signal) => {
    let q;
    try {
      q = parseTapQuery(p);
    } catch (e) {
      if (e instanceof TapQueryError) throw new ApiError(400, e.message);
      throw e;
    }
    const what = `${q.body.resource} in ${q.body.namespace}`;
    const upstream = new AbortController();
    const rows = new TapRows(q.filters);
    const queue: string[] = [];
    let sent = 0, dropped = 0;
    let end: RowsEnd | undefined;
    let wake: (() => void) | undefined;
    const push = (v: unknown) => {
      if (end) return;
      if (queue.length >= capacity) {
        dropped++;
        return;
      }
      queue.push(JSON.stringify(v));
      wake?.();
    };
    const finish = (e: Omit<RowsEnd, "rows" | "dropped">) => {
      if (end) return;
      end = { ...e, rows: sent + queue.length, dropped };
      clearTimeout(timer);
      upstream.abort();
      wake?.();
    };
    const timer = setTimeout(() => finish({ reason: "duration" }), q.durationS * 1000);
    const viewerGone = () => {
      clearTimeout(timer);
      upstream.abort();
    };
    if (signal.aborted) viewerGone();
    signal.addEventListener("abort", viewerGone, { once: true });
    o.log(`tap ${what} started for a viewer`);
    o.open(q.body, (line) => {
      if ("event" in line) { for (const r of rows.push(line)) push({ row: r }); }
      else if ("error" in line) push(line);
      else {finish({
          reason: line.end.reason === "error" ? "error" : line.end.reason,
          message: line.end.message,
        });}
    }, upstream.signal).then((r) => {
      if (r.status !== 0 && (r.status < 200 || r.status >= 300)) {
        finish({
          reason: "refused",
          status: r.status,
          message: (r.text ?? "").trim() || `the tap API answered ${r.status}`,
        });
      } else finish({ reason: "pods-ended" });
    }, (e) => {
      o.log(`tap ${what}: ${(e as Error).message}`);
      finish({ reason: "error", message: (e as Error).message });
    }).finally(() => {
      signal.removeEventListener("abort", viewerGone);
      o.log(`tap ${what} ended`);
    });
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (queue.length === 0 && !end) {
          let t: ReturnType<typeof setTimeout> | undefined;
          await new Promise<void>((res) => {
            wake = res;
            t = setTimeout(res, heartbeatMs);
          });
          clearTimeout(t);
          wake = undefined;
        }
        if (queue.length > 0) {
          const batch = queue.splice(0, queue.length);
          sent += batch.length;
          c.enqueue(enc.encode(batch.join("\n") + "\n"));
        } else if (end) {
          c.enqueue(enc.encode(JSON.stringify({ end: { ...end, rows: sent } }) + "\n"));
          c.close();
        } else c.enqueue(enc.encode("\n"));
      },
      cancel() {
        viewerGone();
        wake?.();
      },
    }, { highWaterMark: 0 });
    return Promise.resolve(
      new Response(body, {
        headers: { "Content-Type": "application/x-ndjson; charset=utf-8", "Cache-Control": "no-store" },
      }),
    );
  };
}
