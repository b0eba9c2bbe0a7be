/** Waiting for one Deployment to roll out (install's gateway, link's service mirror), with the pods' trouble. */
import { podTrouble, rolledOut } from "../deploy.ts";
import type { Kube } from "../kube.ts";

type DeploymentObject = Parameters<typeof rolledOut>[0];
type PodObject = Parameters<typeof podTrouble>[0];

export async function waitRolledOut(
  kube: Kube,
  namespace: string,
  name: string,
  timeoutMs: number,
  status: (text: string) => void = () => {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await kube.get<DeploymentObject>(`/apis/apps/v1/namespaces/${namespace}/deployments/${name}`);
    if (d && rolledOut(d)) return;
    status(
      `waiting for ${namespace}/${name}: ${d?.status?.availableReplicas ?? 0}/${d?.spec?.replicas ?? 1}`,
    );
    if (Date.now() > deadline) {
      const selector = Object.entries(d?.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(
        ",",
      );
      const pods = selector
        ? await kube.list<PodObject>(`/api/v1/namespaces/${namespace}/pods`, { labelSelector: selector })
        : [];
      throw new Error(
        `Deployment ${namespace}/${name} did not roll out within ${timeoutMs / 1000}s: ` +
          (pods.map(podTrouble).join("; ") || "no pods"),
      );
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}
