// Detached component processes: each runs in its own session (setsid) so it outlives the command that started
// it, logs to LOG_DIR/<name>.log and is tracked by a pid file in RUN_DIR. No supervisor: `cluster:up` restarts
// whatever is not running.

import { join } from "node:path";
import { LOG_DIR, RUN_DIR } from "./config.ts";
import { exec, exists, must, sleep } from "./exec.ts";

export interface ProcessSpec {
  name: string;
  binary: string;
  args: string[];
  env?: Record<string, string>;
  /** Network namespace (a name under /run/netns) to run in; the mount namespace stays the host's. */
  netns?: string;
}

export const logFile = (name: string) => join(LOG_DIR, `${name}.log`);
const pidFile = (name: string) => join(RUN_DIR, `${name}.pid`);

/** The pid of a running component, checked against /proc so a stale pid file or a reused pid does not count. */
export async function runningPid(name: string, binary?: string): Promise<number | undefined> {
  let pid: number;
  let written: number;
  try {
    const pf = pidFile(name);
    pid = Number((await Deno.readTextFile(pf)).trim());
    written = (await Deno.stat(pf)).mtime?.getTime() ?? 0;
  } catch {
    return undefined;
  }
  if (!pid) return undefined;
  try {
    const cmdline = await Deno.readTextFile(`/proc/${pid}/cmdline`);
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // A zombie is not running.
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return undefined;
    if (binary && !cmdline.split("\0")[0].endsWith(binary.split("/").pop()!)) return undefined;
    // The same binary is not enough: after a reboot with /run kept, east's etcd.pid named west's etcd (both
    // are `etcd`), so east skipped starting its own, and `down` would have stopped west's.
    if (!(await startedBy(pid, written))) return undefined;
    return pid;
  } catch {
    return undefined;
  }
}

/** Slack for clock-tick rounding between the process start time and the pid file's mtime. */
const START_SLACK_MS = 2000;

/**
 * Whether process `pid` existed when its pid file was written (at `writtenMs`): the file is written by the
 * process itself (the shell before its exec), so a process that started later only reuses the number.
 */
export async function startedBy(pid: number, writtenMs: number): Promise<boolean> {
  const start = await processStartMs(pid);
  return start !== undefined && start <= writtenMs + START_SLACK_MS;
}

/** When a process started (ms since the epoch), from /proc: boot time plus its start in clock ticks. */
export async function processStartMs(pid: number): Promise<number | undefined> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // Fields after the command's ")": state is field 3, starttime field 22.
    const ticks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    const btime = Number(/^btime (\d+)$/m.exec(await Deno.readTextFile("/proc/stat"))?.[1]);
    if (!Number.isFinite(ticks) || !btime) return undefined;
    // USER_HZ is 100 on every Linux ABI this runs on (x86-64, arm64).
    return btime * 1000 + ticks * 10;
  } catch {
    return undefined;
  }
}

export async function start(spec: ProcessSpec): Promise<number> {
  await Deno.mkdir(RUN_DIR, { recursive: true });
  await Deno.mkdir(LOG_DIR, { recursive: true });
  const pf = pidFile(spec.name);
  await Deno.remove(pf).catch(() => {});
  const log = logFile(spec.name);
  await Deno.writeTextFile(log, `--- ${new Date().toISOString()} ${spec.binary} ${spec.args.join(" ")}\n`, {
    append: true,
  });
  // The shell records its own pid and then execs the binary, so the pid file names the component itself.
  const script = 'echo $$ > "$WEFT_PIDFILE"; exec "$@" >> "$WEFT_LOGFILE" 2>&1 < /dev/null';
  const env = { ...spec.env, WEFT_PIDFILE: pf, WEFT_LOGFILE: log };
  // nsenter joins only the network namespace: the kubelet's volume mounts must stay visible to containerd.
  const argv = spec.netns
    ? ["nsenter", `--net=/run/netns/${spec.netns}`, "--", spec.binary, ...spec.args]
    : [spec.binary, ...spec.args];
  await must("setsid", ["-f", "sh", "-c", script, "sh", ...argv], { env });
  for (let i = 0; i < 100; i++) {
    if (await exists(pf)) {
      const pid = Number((await Deno.readTextFile(pf)).trim());
      if (pid) return pid;
    }
    await sleep(50);
  }
  throw new Error(`${spec.name}: did not start; see ${log}`);
}

/** Stops a component: SIGTERM, then SIGKILL after `graceMs`. */
export async function stop(name: string, graceMs = 10_000): Promise<boolean> {
  const pid = await runningPid(name);
  await Deno.remove(pidFile(name)).catch(() => {});
  if (!pid) return false;
  await killPid(pid, graceMs);
  return true;
}

export async function killPid(pid: number, graceMs: number) {
  try {
    Deno.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const end = Date.now() + graceMs;
  while (Date.now() < end) {
    if (!(await alive(pid))) return;
    await sleep(100);
  }
  try {
    Deno.kill(pid, "SIGKILL");
  } catch { /* gone */ }
  for (let i = 0; i < 50 && (await alive(pid)); i++) await sleep(100);
}

async function alive(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

/** The last lines of a component's log, for error messages. */
export async function logTail(name: string, lines = 15): Promise<string> {
  try {
    const text = await Deno.readTextFile(logFile(name));
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Pids of processes whose command line contains (or starts with) `needle`, e.g. containerd shims left behind. */
export async function pidsMatching(needle: string, prefix = false): Promise<number[]> {
  const pids: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = (await Deno.readTextFile(`/proc/${e.name}/cmdline`)).replaceAll("\0", " ");
      if (prefix ? cmd.startsWith(needle) : cmd.includes(needle)) pids.push(Number(e.name));
    } catch { /* exited */ }
  }
  return pids;
}

/** Kills what is left in kubelet's pod cgroups and removes them, in every v1 hierarchy. */
export async function killCgroup(name: string) {
  const roots: string[] = [];
  try {
    for await (const e of Deno.readDir("/sys/fs/cgroup")) roots.push(join("/sys/fs/cgroup", e.name, name));
  } catch {
    return;
  }
  const dirs: string[] = [];
  const walk = async (d: string) => {
    dirs.push(d);
    for await (const e of Deno.readDir(d)) if (e.isDirectory) await walk(join(d, e.name));
  };
  for (const r of roots) await walk(r).catch(() => {});
  for (const d of dirs) {
    const procs = await Deno.readTextFile(join(d, "cgroup.procs")).catch(() => "");
    for (const p of procs.split("\n").filter(Boolean)) await killPid(Number(p), 0);
  }
  dirs.sort((a, b) => b.length - a.length);
  for (const d of dirs) await Deno.remove(d).catch(() => {});
}

/**
 * Stops and removes every pod sandbox of the containerd at `socket` through the CRI, so CNI tears down their
 * network; a no-op when crictl is not built. `who` names the node in the log line.
 */
export async function removePodSandboxes(
  crictl: string,
  socket: string,
  who: string,
  log: (s: string) => void,
) {
  if (!(await exists(crictl))) return;
  const endpoint = ["-r", `unix://${socket}`, "-i", `unix://${socket}`, "--timeout", "60s"];
  const pods = (await exec(crictl, [...endpoint, "pods", "-q"])).stdout.trim().split("\n").filter(Boolean);
  if (pods.length === 0) return;
  log(`${who}: removing ${pods.length} pod sandbox(es)`);
  await exec(crictl, [...endpoint, "stopp", ...pods]);
  await exec(crictl, [...endpoint, "rmp", "-f", ...pods]);
}
