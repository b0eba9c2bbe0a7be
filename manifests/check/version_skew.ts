/**
 * `data plane / version skew` (issue 19): each meshed pod's proxy against the control plane, as Linkerd's
 * "data plane and control plane versions match". The control plane's version is the image tag of its
 * controllers (destination, policy, validator, identity, proxy-injector; the injector's `--proxy-version=`
 * when set, since that is what it stamps on new pods); a proxy's is the `linkerd.io/proxy-version`
 * annotation the injector sets, else its image tag. weft images are mostly tagged `dev`, so equal versions
 * are also compared by build: the image ID the kubelet reports for the proxy container and for the
 * controllers (one image holds both), which tells a proxy started before the last deploy from one started
 * after it.
 *
 * A differing pod is a warning (restart its workload to roll the proxy); with versions that both read as
 * numbers (`1.2.3`, `v1.2`, `stable-2.14.1`, `edge-24.1.2`) a proxy more than one minor version away, or
 * on another major version, fails the check.
 */
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import { Annotations } from "../../proto/annotations.ts";
import { imageTag } from "../../control/injector/image_tag.ts";
import { NAMESPACE } from "../render.ts";
import { type Obj, podContainers } from "./objects.ts";
import { type CheckContext, type CheckResult, result } from "./result.ts";

const GROUP = "data plane";
const NAME = "version skew";
/** Containers of the control plane that run the weft image's controllers. */
const CONTROLLERS = new Set(["destination", "policy", "validator", "identity", "proxy-injector"]);
/** Pods listed in a detail line before "and N more". */
const SHOWN = 10;

export { imageTag };

export interface Version {
  version?: string;
  /** The image ID the kubelet reports (a content digest), when the container has started. */
  build?: string;
}

/** major.minor of a version that reads as numbers; undefined for `dev` and other names. */
export function numericVersion(v: string | undefined): { major: number; minor: number } | undefined {
  const m = v ? /^(?:v|stable-|edge-)?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$/.exec(v) : null;
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/** How many minor versions apart two versions are: Infinity across majors, undefined when not comparable. */
export function skew(a: string | undefined, b: string | undefined): number | undefined {
  const x = numericVersion(a);
  const y = numericVersion(b);
  if (!x || !y) return undefined;
  return x.major !== y.major ? Infinity : Math.abs(x.minor - y.minor);
}

function statusOf(p: Obj, name: string): Obj | undefined {
  return podContainers(p).status.find((c: Obj) => c.name === name);
}

export function proxyVersion(p: Obj): Version {
  const spec = podContainers(p).spec.find((c: Obj) => c.name === PROXY_CONTAINER);
  return {
    version: p.metadata.annotations?.[Annotations.proxyVersion] || imageTag(spec?.image),
    build: statusOf(p, PROXY_CONTAINER)?.imageID || undefined,
  };
}

const live = (p: Obj) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp;

/** The control plane's versions and builds (more than one of either while it rolls out). */
export function controlPlaneVersions(pods: Obj[]): { versions: Set<string>; builds: Set<string> } {
  const versions = new Set<string>();
  const builds = new Set<string>();
  for (const p of pods.filter((p) => p.metadata.namespace === NAMESPACE && live(p))) {
    for (const c of podContainers(p).spec.filter((c: Obj) => CONTROLLERS.has(c.name))) {
      const flag = [...(c.command ?? []), ...(c.args ?? [])].find((w: string) =>
        w.startsWith("--proxy-version=")
      );
      const v = flag ? flag.slice("--proxy-version=".length) : imageTag(c.image);
      if (v) versions.add(v);
      const id = statusOf(p, c.name)?.imageID;
      if (id) builds.add(id);
    }
  }
  return { versions, builds };
}

export interface Skewed {
  pod: string;
  proxy: Version;
  /** Minor versions apart (Infinity: another major), undefined when only the build or an unnumbered version differs. */
  apart?: number;
  why: string;
}

const short = (id: string) => id.replace(/^.*sha256:/, "sha256:").slice(0, 19);

/** Running meshed pods whose proxy differs from the control plane. */
export function skewedProxies(pods: Obj[]): { checked: number; skewed: Skewed[]; control: Version } {
  const cp = controlPlaneVersions(pods);
  const cpVersions = [...cp.versions];
  const running = pods.filter(live);
  const skewed: Skewed[] = [];
  for (const p of running) {
    const proxy = proxyVersion(p);
    const pod = `${p.metadata.namespace}/${p.metadata.name}`;
    if (proxy.version && cpVersions.length && !cp.versions.has(proxy.version)) {
      const numbered = numericVersion(proxy.version) !== undefined &&
        cpVersions.some((v) => numericVersion(v) !== undefined);
      const apart = numbered
        ? Math.min(...cpVersions.filter((v) => numericVersion(v)).map((v) => skew(proxy.version, v)!))
        : undefined;
      const distance = apart === undefined
        ? ""
        : apart === Infinity
        ? " (another major version)"
        : apart === 0
        ? " (same minor version)"
        : ` (${apart} minor version${apart === 1 ? "" : "s"} apart)`;
      skewed.push({
        pod,
        proxy,
        apart,
        why: `proxy ${proxy.version}, control plane ${cpVersions.join("/")}${distance}`,
      });
    } else if (proxy.build && cp.builds.size && !cp.builds.has(proxy.build)) {
      skewed.push({
        pod,
        proxy,
        why: `proxy ${proxy.version ?? "?"} build ${short(proxy.build)}, control plane build ${
          [...cp.builds].map(short).join("/")
        }`,
      });
    }
  }
  return {
    checked: running.length,
    skewed,
    control: {
      version: cpVersions.join("/") || undefined,
      build: [...cp.builds].map(short).join("/") || undefined,
    },
  };
}

export async function checkVersionSkew(ctx: CheckContext): Promise<CheckResult> {
  const pods = await ctx.kube.list<Obj>("/api/v1/pods", {
    labelSelector: `linkerd.io/control-plane-ns=${NAMESPACE}`,
  });
  const { checked, skewed, control } = skewedProxies(pods);
  const cp = `${control.version ?? "unknown version"}${control.build ? `, build ${control.build}` : ""}`;
  if (!skewed.length) {
    return result(GROUP, NAME, "ok", `${checked} meshed pods' proxies match the control plane (${cp})`);
  }
  const far = skewed.filter((s) => s.apart !== undefined && s.apart > 1);
  const list = (xs: Skewed[]) =>
    xs.slice(0, SHOWN).map((s) => `${s.pod}: ${s.why}`).join("; ") +
    (xs.length > SHOWN ? `; and ${xs.length - SHOWN} more` : "");
  return result(
    GROUP,
    NAME,
    far.length ? "fail" : "warn",
    `${skewed.length} of ${checked} meshed pods run another proxy than the control plane's (${cp}); ` +
      `restart their workloads to roll the proxies (docs/ha.md): ${list(far.length ? far : skewed)}` +
      (far.length && far.length < skewed.length
        ? ` (and ${skewed.length - far.length} within one version)`
        : ""),
  );
}
