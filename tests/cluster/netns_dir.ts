// /run/netns, shared by containerd (its pods' `cni-*` namespaces) and `ip netns` (the data-path tests and the
// benchmark). The first `ip netns add` on a machine turns the directory into a mount point: a recursive bind
// mount of /run/netns over itself, made recursively shared (iproute2's netns_add: MS_SHARED|MS_REC, and on
// EINVAL first MS_BIND|MS_REC of the directory onto itself). Namespace mounts made before that stay on the
// hidden directory underneath, with a copy in the new mount: removing one unmounts the visible copy, and the
// unlink then fails with EBUSY because the hidden mount still sits on the same file. containerd retries forever
// and the pod never finishes terminating. Preparing the directory the same way before containerd starts makes
// every later `ip netns add` a no-op on the mount table.

import { must } from "./exec.ts";

export const NETNS_DIR = "/run/netns";

export interface MountEntry {
  id: number;
  parent: number;
  mountPoint: string;
  /** Optional fields, e.g. `shared:1`, `master:3`. */
  optional: string[];
}

/** Parses /proc/self/mountinfo (see proc(5)); octal escapes in mount points are decoded. */
export function parseMountinfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split("\n")) {
    const f = line.split(" ");
    if (f.length < 7) continue;
    const dash = f.indexOf("-", 6);
    entries.push({
      id: Number(f[0]),
      parent: Number(f[1]),
      mountPoint: f[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))),
      optional: f.slice(6, dash < 0 ? f.length : dash),
    });
  }
  return entries;
}

export interface NetnsDirState {
  /** /run/netns is a mount point (its top mount). */
  mountPoint: boolean;
  /** That mount propagates (`shared:N`), as `ip netns add` leaves it. */
  shared: boolean;
  /** Namespace mounts in the visible /run/netns. */
  visible: string[];
  /** Mounts below /run/netns that sit under a covering mount: they can never be unlinked (the bug). */
  hidden: string[];
  /** /run/netns is no mount point but holds mounts: the next `ip netns add` would hide them all. */
  exposed: string[];
}

/** What the mount table says about /run/netns. Pure, for the unit test. */
export function netnsDirState(mounts: MountEntry[], dir = NETNS_DIR): NetnsDirState {
  const tops = mounts.filter((m) => m.mountPoint === dir);
  // A later mount on the same point covers earlier ones; the one no other mount on that point has as parent
  // is the visible one.
  const top = tops.find((t) => !tops.some((o) => o.parent === t.id));
  const below = mounts.filter((m) => m.mountPoint.startsWith(dir + "/"));
  const visible = top ? below.filter((m) => m.parent === top.id).map((m) => m.mountPoint) : [];
  const hidden = top ? below.filter((m) => m.parent !== top.id).map((m) => m.mountPoint) : [];
  return {
    mountPoint: top !== undefined,
    shared: top?.optional.some((o) => o.startsWith("shared:")) ?? false,
    visible,
    hidden,
    exposed: top ? [] : below.map((m) => m.mountPoint),
  };
}

export async function readNetnsDirState(): Promise<NetnsDirState> {
  return netnsDirState(parseMountinfo(await Deno.readTextFile("/proc/self/mountinfo")));
}

/** One line for `cluster:status`, or undefined when /run/netns is as `ip netns` leaves it and nothing is hidden. */
export function netnsDirProblem(s: NetnsDirState): string | undefined {
  if (s.hidden.length) {
    return `${NETNS_DIR}: ${s.hidden.length} namespace mount(s) hidden under a later mount of ${NETNS_DIR} ` +
      `(${s.hidden.slice(0, 3).join(", ")}${
        s.hidden.length > 3 ? ", …" : ""
      }): pods using them cannot finish ` +
      `terminating (unlinkat: device or resource busy). Fix: cluster:down, then cluster:up (down unmounts them).`;
  }
  if (!s.mountPoint && s.exposed.length) {
    return `${NETNS_DIR} is not a mount point but holds ${s.exposed.length} namespace mount(s): the first ` +
      "`ip netns add` (data-path tests, bench) will make their pods unable to terminate. Fix before running " +
      "them: cluster:down, then cluster:up (up prepares the directory before containerd starts).";
  }
  if (!s.mountPoint || !s.shared) {
    return `${NETNS_DIR} is not a shared mount point: the next cluster:up prepares it (before containerd starts).`;
  }
  return undefined;
}

/**
 * Makes /run/netns what `ip netns add` would make it, before containerd puts anything there. Refuses (returns
 * the reason) when it holds mounts already: binding over them is exactly what hides them.
 */
export async function prepareNetnsDir(): Promise<{ changed: boolean; refused?: string }> {
  await Deno.mkdir(NETNS_DIR, { recursive: true });
  const before = await readNetnsDirState();
  if (before.mountPoint && before.shared) return { changed: false };
  if (!before.mountPoint) {
    if (before.exposed.length) {
      return { changed: false, refused: netnsDirProblem(before) };
    }
    await must("mount", ["--rbind", NETNS_DIR, NETNS_DIR]);
  }
  await must("mount", ["--make-rshared", NETNS_DIR]);
  const after = await readNetnsDirState();
  if (!after.mountPoint || !after.shared) throw new Error(`${NETNS_DIR} is still not a shared mount point`);
  return { changed: true };
}
