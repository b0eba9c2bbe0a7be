/**
 * JSON lines over a pipe, the benchmark's only channel between the controller process and its
 * client processes (no sockets, so nothing of it competes with the gRPC traffic it measures).
 */

/** Yields each complete line of `stream` until it ends. */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.length > 0) yield line;
    }
  }
  if (buf.length > 0) yield buf;
}

/** Writes one JSON value per line; writes are serialized so lines never interleave. */
export class LineWriter {
  readonly #w: WritableStreamDefaultWriter<Uint8Array>;
  readonly #enc = new TextEncoder();
  #chain: Promise<void> = Promise.resolve();

  constructor(stream: WritableStream<Uint8Array>) {
    this.#w = stream.getWriter();
  }

  send(v: unknown): Promise<void> {
    const bytes = this.#enc.encode(JSON.stringify(v) + "\n");
    this.#chain = this.#chain.then(() => this.#w.write(bytes));
    return this.#chain;
  }

  async close(): Promise<void> {
    await this.#chain;
    await this.#w.close().catch(() => {});
  }
}
