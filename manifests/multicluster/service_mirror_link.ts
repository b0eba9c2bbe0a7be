/**
 * The service mirror objects (manifests/multicluster/service_mirror.ts) as `link` applies and `unlink` deletes
 * them: with the source cluster's image, read from its injector, so the mirror runs the build of that mesh.
 */
import type { Manifest } from "../kinds.ts";
import type { Kube } from "../kube.ts";
import { type MeshFacts, readMeshFacts } from "./mesh_facts.ts";
import { serviceMirrorObjects } from "./service_mirror.ts";

/** link's renderer. */
export function renderServiceMirrorFor(clusterName: string, source: MeshFacts): Manifest[] {
  return serviceMirrorObjects({
    targetClusterName: clusterName,
    image: source.image,
    imagePullPolicy: source.imagePullPolicy,
  });
}

/** unlink's list of what to delete (only the names matter, so a cluster without weft still gets one). */
export async function serviceMirrorObjectsFor(clusterName: string, kube: Kube): Promise<Manifest[]> {
  const facts = await readMeshFacts(kube).catch(() => undefined);
  return serviceMirrorObjects({
    targetClusterName: clusterName,
    ...(facts ? { image: facts.image, imagePullPolicy: facts.imagePullPolicy } : {}),
  });
}
