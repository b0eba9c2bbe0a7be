/**
 * How the image gets to the cluster's nodes: imported into the local cluster's containerd, loaded
 * into a kind cluster, or not at all (an image the nodes pull from a registry). The choice is pure
 * (`chooseTarget`, from flags and facts about the machine); `loadImage` does it.
 */
import { buildImages, type BuiltImage, type ImageKey, importImages, WEFT_IMAGE } from "../images/build.ts";
import { clusterConfig, IMAGE_CACHE, MAX_WORKERS, workerContainerdSocket } from "../tests/cluster/config.ts";

// Named explicitly: config.ts's plain constants follow WEFT_CLUSTER, the cluster tool's selection.
const WEST = clusterConfig("west");
const EAST = clusterConfig("east");
const LOCAL_API_URL = WEST.apiUrl;

export type ImageTarget =
  | {
    kind: "containerd";
    socket: string;
    why: string; /** Other nodes' runtimes on this machine. */
    alsoSockets?: string[];
  }
  | { kind: "kind"; cluster: string; why: string }
  | { kind: "none"; why: string };

export interface TargetFacts {
  /** The API server URL of the kubeconfig's current cluster. */
  server: string;
  /** Name of the kubeconfig's current cluster (kind names them `kind-<cluster>`). */
  clusterName: string;
  /** Whether a file exists (the local cluster's containerd socket). */
  exists: (path: string) => boolean;
  /** Whether the `kind` command and a Docker engine answer. */
  kindAvailable: () => Promise<string | undefined>;
}

export interface TargetFlags {
  /** `--kind` (true) or `--kind=<cluster>`. */
  kind?: string | true;
  containerd?: string;
  noImageLoad?: boolean;
}

export class TargetError extends Error {
  override name = "TargetError";
}

const KIND_HELP =
  "install kind and start Docker, or pass --image=<ref> --no-image-load for an image the nodes can pull";

export async function chooseTarget(flags: TargetFlags, facts: TargetFacts): Promise<ImageTarget> {
  if (flags.noImageLoad) return { kind: "none", why: "--no-image-load" };
  if (flags.containerd) {
    if (!facts.exists(flags.containerd)) {
      throw new TargetError(`--containerd=${flags.containerd}: no such socket on this machine`);
    }
    return { kind: "containerd", socket: flags.containerd, why: "--containerd" };
  }
  const kindName = facts.clusterName.startsWith("kind-") ? facts.clusterName.slice(5) : undefined;
  if (flags.kind !== undefined || kindName !== undefined) {
    const cluster = typeof flags.kind === "string" ? flags.kind : kindName ?? "weft";
    const why = flags.kind !== undefined ? "--kind" : `kubeconfig cluster "${facts.clusterName}"`;
    const missing = await facts.kindAvailable();
    if (missing) throw new TargetError(`${why} needs kind, but ${missing}: ${KIND_HELP}`);
    return { kind: "kind", cluster, why };
  }
  if (facts.server === LOCAL_API_URL && facts.exists(WEST.containerdSocket)) {
    // Worker nodes (`cluster:up --nodes=N`) run their own containerd: each needs the image too.
    const alsoSockets = Array.from({ length: MAX_WORKERS }, (_, i) => workerContainerdSocket(i + 1))
      .filter((s) => facts.exists(s));
    return {
      kind: "containerd",
      socket: WEST.containerdSocket,
      why: "the local cluster (tests/cluster)",
      alsoSockets,
    };
  }
  if (facts.server === EAST.apiUrl && facts.exists(EAST.containerdSocket)) {
    return {
      kind: "containerd",
      socket: EAST.containerdSocket,
      why: "the local east cluster (tests/cluster, --name=east)",
      alsoSockets: [],
    };
  }
  throw new TargetError(
    `cannot tell how to get the image into the cluster at ${facts.server}: it is neither a local cluster ` +
      `(${LOCAL_API_URL}, east ${EAST.apiUrl}) nor a kind cluster. Pass --kind[=<name>] for kind, --containerd=<socket> for a ` +
      `node's containerd on this machine, or --image=<ref> --no-image-load for an image in a registry`,
  );
}

async function ok(cmd: string, args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output();
    return out.success;
  } catch {
    return false;
  }
}

/** Why kind cannot be used here, or undefined when it can. */
export async function kindAvailable(): Promise<string | undefined> {
  if (!(await ok("kind", ["version"]))) return "the `kind` command is not installed";
  if (!(await ok("docker", ["info"]))) return "no Docker engine answers `docker info`";
  return undefined;
}

export interface LoadedImage {
  name: string;
  digest?: string;
  /** What was done, for the progress display. */
  detail: string;
  /** The other images built and loaded with it (`also`), by key. */
  others: Partial<Record<ImageKey, { name: string; digest: string }>>;
}

/**
 * Builds the weft image and the `also` images (each only when its inputs changed) and puts them where the
 * nodes find them.
 */
export async function loadImage(
  target: ImageTarget,
  image: string,
  log: (s: string) => void,
  also: ImageKey[] = [],
): Promise<LoadedImage> {
  if (target.kind === "none") {
    return { name: image, detail: `not loaded (${target.why}); nodes pull ${image}`, others: {} };
  }
  if (image !== WEFT_IMAGE) {
    throw new TargetError(
      `--image=${image}: deploy builds and loads ${WEFT_IMAGE}; use --no-image-load for others`,
    );
  }
  await Deno.mkdir(IMAGE_CACHE, { recursive: true });
  const keys: ImageKey[] = ["weft", ...also.filter((k) => k !== "weft")];
  const images: BuiltImage[] = await buildImages({
    cacheDir: IMAGE_CACHE,
    corednsBinary: "",
    only: keys,
    log,
  });
  const img = images[0];
  const others = Object.fromEntries(
    images.slice(1).map((b, i) => [keys[i + 1], { name: b.name, digest: b.digest }]),
  ) as LoadedImage["others"];
  const built = img.rebuilt ? "built" : "up to date";
  if (target.kind === "containerd") {
    let imported = false;
    for (const socket of [target.socket, ...target.alsoSockets ?? []]) {
      await importImages(images, socket, (s) => {
        imported = true;
        log(s);
      });
    }
    return {
      name: img.name,
      digest: img.digest,
      detail: `${built}, ${imported ? "imported into" : "already in"} containerd (${target.why})`,
      others,
    };
  }
  for (const b of images) {
    const out = await new Deno.Command("kind", {
      args: ["load", "image-archive", b.archive, "--name", target.cluster],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new TargetError(`kind load image-archive: ${new TextDecoder().decode(out.stderr).trim()}`);
    }
  }
  return {
    others,
    name: img.name,
    digest: img.digest,
    detail: `${built}, loaded into kind cluster ${target.cluster}`,
  };
}
