/**
 * Resident memory of processes (proxies under attack), sampled from /proc while something runs.
 * Growth is the largest rise over the lowest earlier sample, so memory freed meanwhile (by the
 * previous case, say) cannot hide what is taken now.
 */

/** VmRSS of a process in MiB, from /proc (0 once it is gone). */
export async function rssMib(pid: number): Promise<number> {
  const s = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
  const m = s.match(/^VmRSS:\s+(\d+) kB/m);
  return m ? Number(m[1]) / 1024 : 0;
}

/** VmRSS in MiB of each named process. */
export async function rssOf(pids: Record<string, number>): Promise<Record<string, number>> {
  const now: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) now[name] = await rssMib(pid);
  return now;
}

export interface RssFigures {
  base: Record<string, number>;
  peak: Record<string, number>;
  growth: Record<string, number>;
  /** Every sample, in order. */
  samples: Record<string, number>[];
}

/**
 * Samples `pids` every `intervalMs` from a baseline taken earlier (`base`) until `stop()`, which
 * resolves with the figures once the sampling loop has ended.
 */
export function watchRss(
  pids: Record<string, number>,
  base: Record<string, number>,
  intervalMs: number,
): { stop(): Promise<RssFigures> } {
  const peak = { ...base };
  const low = { ...base };
  const growth: Record<string, number> = Object.fromEntries(Object.keys(pids).map((k) => [k, 0]));
  const samples: Record<string, number>[] = [];
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      const now: Record<string, number> = {};
      for (const [name, pid] of Object.entries(pids)) {
        now[name] = await rssMib(pid);
        peak[name] = Math.max(peak[name], now[name]);
        low[name] = Math.min(low[name], now[name]);
        growth[name] = Math.max(growth[name], now[name] - low[name]);
      }
      samples.push(now);
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    stop: async () => {
      sampling = false;
      await loop;
      return { base, peak, growth, samples };
    },
  };
}

/** One line of figures, as the hostile tests print them (e.g. proxies a and b). */
export function rssLine(name: string, f: RssFigures, boundMib: number): string {
  const each = (v: Record<string, number>) =>
    Object.keys(f.base).map((k) => `${k}=${v[k].toFixed(1)}`).join(" ");
  return `${name}: proxy RSS baseline ${each(f.base)} MiB, peak ${each(f.peak)} MiB, ` +
    `growth ${each(f.growth)} MiB (bound ${boundMib} MiB)`;
}
