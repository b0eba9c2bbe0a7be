/**
 * Whether the API server runs native sidecars (init containers with `restartPolicy: Always`):
 * beta and on by default from Kubernetes 1.29 (KEP-753), so the injector uses them from there.
 */

export interface ServerVersion {
  major?: string;
  minor?: string;
  gitVersion?: string;
}

export const NATIVE_SIDECAR_MIN_MINOR = 29;

/** Major and minor from `/version`; providers write minors like "29+", so the gitVersion is a fallback. */
export function parseServerVersion(v: ServerVersion): { major: number; minor: number } {
  const major = /^(\d+)/.exec(v.major ?? "")?.[1];
  const minor = /^(\d+)/.exec(v.minor ?? "")?.[1];
  if (major !== undefined && minor !== undefined) return { major: Number(major), minor: Number(minor) };
  const git = /^v?(\d+)\.(\d+)/.exec(v.gitVersion ?? "");
  if (git) return { major: Number(git[1]), minor: Number(git[2]) };
  throw new Error(`cannot read a version from the API server's /version: ${JSON.stringify(v)}`);
}

export function supportsNativeSidecars(v: ServerVersion): boolean {
  const { major, minor } = parseServerVersion(v);
  return major > 1 || (major === 1 && minor >= NATIVE_SIDECAR_MIN_MINOR);
}
