// `cluster:up --kind`: for machines with a Docker engine, a kind cluster with the project image loaded, so the
// same cluster tests run there.

import { join } from "node:path";
import { IMAGE_CACHE, STATE_DIR } from "./config.ts";
import { exec, must } from "./exec.ts";
import { buildImages } from "../../images/build.ts";

const CLUSTER = "weft";

export async function kindUp(log: (s: string) => void): Promise<string> {
  if ((await exec("sh", ["-c", "command -v kind"])).code !== 0) {
    throw new Error("--kind: the `kind` command is not installed");
  }
  if ((await exec("docker", ["info"]).catch(() => ({ code: 1 }))).code !== 0) {
    throw new Error("--kind: no Docker engine answers `docker info` (kind needs one)");
  }
  const clusters = (await must("kind", ["get", "clusters"])).split("\n");
  if (!clusters.includes(CLUSTER)) {
    log(`kind: creating cluster ${CLUSTER}`);
    await must("kind", ["create", "cluster", "--name", CLUSTER, "--wait", "120s"]);
  }
  await Deno.mkdir(IMAGE_CACHE, { recursive: true });
  // kind brings its own pause image and CoreDNS; only the project image is needed.
  const images = await buildImages({ cacheDir: IMAGE_CACHE, corednsBinary: "", log, only: ["weft"] });
  for (const img of images) {
    log(`kind: loading ${img.name}`);
    await must("kind", ["load", "image-archive", img.archive, "--name", CLUSTER]);
  }
  await Deno.mkdir(STATE_DIR, { recursive: true });
  const kubeconfig = join(STATE_DIR, "kind.kubeconfig");
  await Deno.writeTextFile(kubeconfig, await must("kind", ["get", "kubeconfig", "--name", CLUSTER]), {
    mode: 0o600,
  });
  return kubeconfig;
}

export async function kindDown(log: (s: string) => void) {
  log(`kind: deleting cluster ${CLUSTER}`);
  await must("kind", ["delete", "cluster", "--name", CLUSTER]);
}
