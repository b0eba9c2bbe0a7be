/**
 * resetStream must put RST_STREAM on the wire even when the stream's writable side is open and
 * no trailers are pending; Deno 2.9.6's bare `close(code)` sends END_STREAM there instead.
 */
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { resetStream } from "./reset_stream.ts";
import { errorCode, FLAG, FRAME, frame, hpackLiteral, RawH2Client, startBackend } from "./testing.ts";

async function framesAfter(reset: (s: http2.ServerHttp2Stream) => void): Promise<string[]> {
  const be = await startBackend((stream) => {
    stream.resume();
    stream.respond({ ":status": 200 });
    stream.write("some");
    setTimeout(() => reset(stream), 20);
  });
  const raw = await RawH2Client.open(be.port);
  try {
    raw.write(frame(
      FRAME.HEADERS,
      FLAG.END_HEADERS | FLAG.END_STREAM,
      1,
      hpackLiteral([[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "x"]]),
    ));
    await raw.waitFor((f) =>
      f.streamId === 1 && (f.type === FRAME.RST_STREAM || (f.flags & FLAG.END_STREAM) !== 0)
    );
    return raw.frames.filter((f) => f.streamId === 1 && f.type !== FRAME.HEADERS).map((f) =>
      f.type === FRAME.RST_STREAM ? `RST(${errorCode(f)})` : (f.flags & FLAG.END_STREAM ? "DATA+END" : "DATA")
    );
  } finally {
    raw.destroy();
    await be.close();
  }
}

Deno.test("resetStream: RST_STREAM with the code, no END_STREAM, on an open stream", async () => {
  assert.deepEqual(await framesAfter((s) => resetStream(s, http2.constants.NGHTTP2_CANCEL)), [
    "DATA",
    "RST(8)",
  ]);
});

Deno.test("Deno fact (re-check on upgrade): bare close(code) on an open stream ends it cleanly", async () => {
  // If this starts failing, Deno fixed close(): resetStream's workaround can go.
  assert.deepEqual(await framesAfter((s) => s.close(http2.constants.NGHTTP2_CANCEL)), ["DATA", "DATA+END"]);
});
