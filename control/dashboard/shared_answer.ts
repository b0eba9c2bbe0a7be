/**
 * One answer shared by every viewer for a while. The overview runs the read-only checks of mesh:check (a score of
 * API requests, certificate parsing): too costly to repeat for each open tab on each refresh, and the answer is the
 * same for all of them. Callers that arrive while it is being computed share that computation; a failure is not
 * kept, so the next caller tries again.
 */
export function sharedFor<T>(ttlMs: number, now: () => number, compute: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (last && now() - last.at < ttlMs) return last.value;
    const entry = { at: now(), value: compute() };
    last = entry;
    entry.value.catch(() => {
      if (last === entry) last = undefined;
    });
    return entry.value;
  };
}
