/** The `cluster` checks: the API server answers, the namespace is set up, the CRDs are Established. */
import { Annotations } from "../../proto/annotations.ts";
import { CRD_DIR } from "../deploy.ts";
import { objectPath } from "../kinds.ts";
import { loadShippedDir, NAMESPACE } from "../render.ts";
import type { Obj } from "./objects.ts";
import { type CheckContext, type CheckResult, result } from "./result.ts";

const GROUP = "cluster";

export async function checkApiServer(ctx: CheckContext): Promise<CheckResult> {
  const v = await ctx.kube.version();
  return result(GROUP, "API server", "ok", `${ctx.kube.server} answers, Kubernetes ${v.gitVersion}`);
}

/** `present` false means there is nothing more to check: the mesh is not deployed. */
export async function checkNamespace(ctx: CheckContext): Promise<{ result: CheckResult; present: boolean }> {
  const ns = await ctx.kube.get<Obj>(`/api/v1/namespaces/${NAMESPACE}`);
  if (!ns) {
    return {
      result: result(
        GROUP,
        "namespace",
        "fail",
        `namespace ${NAMESPACE} does not exist: run \`deno task deploy\``,
      ),
      present: false,
    };
  }
  const excluded = ns.metadata.labels?.[Annotations.admissionWebhooks] === "disabled";
  return {
    result: result(
      GROUP,
      "namespace",
      excluded ? "ok" : "fail",
      excluded
        ? `${NAMESPACE} exists, excluded from admission webhooks`
        : `${NAMESPACE} lacks the label ${Annotations.admissionWebhooks}=disabled`,
    ),
    present: true,
  };
}

export async function checkCrds(ctx: CheckContext): Promise<CheckResult> {
  const missing: string[] = [];
  const crds = await loadShippedDir(CRD_DIR);
  for (const c of crds) {
    const live = await ctx.kube.get<Obj>(objectPath(c));
    if (!live?.status?.conditions?.some((x: Obj) => x.type === "Established" && x.status === "True")) {
      missing.push(c.metadata.name);
    }
  }
  return result(
    GROUP,
    "CRDs",
    missing.length ? "fail" : "ok",
    missing.length ? `not installed or not Established: ${missing.join(", ")}` : `${crds.length} Established`,
  );
}
