/**
 * A minimal client of a V8 inspector (a process started with `--inspect=127.0.0.1:<port>`): one
 * websocket to its first target and request/response calls by id, for the probes' CPU and heap
 * samplers.
 */
export interface Inspector {
  call(method: string, params?: unknown): Promise<unknown>;
  close(): void;
}

export async function connectInspector(port: number): Promise<Inspector> {
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json() as {
    webSocketDebuggerUrl: string;
  }[];
  if (targets.length === 0) throw new Error(`inspector on port ${port}: no target`);
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`inspector on port ${port}: websocket failed`));
  });
  let nextId = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data as string) as { id?: number; result?: unknown };
    if (m.id !== undefined) {
      waiting.get(m.id)?.(m.result);
      waiting.delete(m.id);
    }
  };
  return {
    call(method, params = {}) {
      const id = ++nextId;
      const answer = new Promise<unknown>((resolve) => waiting.set(id, resolve));
      ws.send(JSON.stringify({ id, method, params }));
      return answer;
    },
    close: () => ws.close(),
  };
}
