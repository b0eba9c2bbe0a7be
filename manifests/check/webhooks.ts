/**
 * The `webhooks` checks, by server-side dry runs: a Pod comes back with a proxy (the injector was
 * called), and an invalid ServiceProfile and an invalid Server are refused by the validators themselves.
 */
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import { Annotations } from "../../proto/annotations.ts";
import { CLUSTER_DOMAIN } from "../render.ts";
import { type Obj, podContainers } from "./objects.ts";
import { type CheckContext, type CheckResult, result } from "./result.ts";

const GROUP = "webhooks";

/** The webhook that refused a dry run, from the API server's message. */
export function deniedBy(message: string): string | undefined {
  return /admission webhook "([^"]+)" denied the request/.exec(message)?.[1];
}

/** `namespace`: where the dry runs go (an injected namespace, so the injector's selector matches). */
export async function checkInjector(ctx: CheckContext, namespace: string): Promise<CheckResult> {
  const name = "proxy injector";
  const r = await ctx.kube.dryRunCreate(`/api/v1/namespaces/${namespace}/pods`, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { generateName: "weft-check-", annotations: { [Annotations.inject]: "enabled" } },
    spec: { containers: [{ name: "app", image: "localhost/weft:dev", ports: [{ containerPort: 8080 }] }] },
  });
  if (r.status !== 201) {
    return result(
      GROUP,
      name,
      "fail",
      `dry-run Pod in ${namespace}: HTTP ${r.status} ${r.text.slice(0, 300)}`,
    );
  }
  const { spec } = podContainers(JSON.parse(r.text));
  const ok = spec.some((c: Obj) => c.name === PROXY_CONTAINER);
  return result(
    GROUP,
    name,
    ok ? "ok" : "fail",
    ok
      ? `a dry-run Pod in ${namespace} came back with ${spec.map((c: Obj) => c.name).join(", ")}`
      : `a dry-run Pod in ${namespace} came back without ${PROXY_CONTAINER}: the injector was not called (failurePolicy Ignore hides an unreachable injector)`,
  );
}

/** An object the CRD schema admits and a validator must refuse. */
interface InvalidObject {
  name: string;
  path: string;
  body: unknown;
  /** The webhook that must be the one refusing it. */
  webhook: string;
}

async function checkRefused(ctx: CheckContext, o: InvalidObject): Promise<CheckResult> {
  const r = await ctx.kube.dryRunCreate(o.path, o.body);
  if (r.status === 201) {
    return result(GROUP, o.name, "fail", "an invalid object was admitted: the validator was not called");
  }
  let message: string;
  try {
    message = JSON.parse(r.text).message as string;
  } catch {
    message = r.text;
  }
  const by = deniedBy(message);
  return result(
    GROUP,
    o.name,
    by === o.webhook ? "ok" : "fail",
    by === o.webhook
      ? `refuses an invalid object: ${message.replace(/^.*denied the request: /, "").slice(0, 140)}`
      : `HTTP ${r.status}: ${message.slice(0, 300)}`,
  );
}

export function checkServiceProfileValidator(ctx: CheckContext, namespace: string): Promise<CheckResult> {
  return checkRefused(ctx, {
    name: "ServiceProfile validator",
    path: `/apis/linkerd.io/v1alpha2/namespaces/${namespace}/serviceprofiles`,
    body: {
      apiVersion: "linkerd.io/v1alpha2",
      kind: "ServiceProfile",
      metadata: { name: `weft-check.${namespace}.svc.${CLUSTER_DOMAIN}` },
      spec: { routes: [{ name: "bad", condition: { method: "GET", pathRegex: "/(unclosed" } }] },
    },
    webhook: "weft-sp-validator.weft.io",
  });
}

export function checkPolicyValidator(ctx: CheckContext, namespace: string): Promise<CheckResult> {
  return checkRefused(ctx, {
    name: "policy validator",
    path: `/apis/policy.linkerd.io/v1beta3/namespaces/${namespace}/servers`,
    body: {
      apiVersion: "policy.linkerd.io/v1beta3",
      kind: "Server",
      metadata: { name: "weft-check" },
      // Valid for the CRD schema, invalid for the validator: an `In` requirement with no values.
      spec: { port: 8080, podSelector: { matchExpressions: [{ key: "app", operator: "In", values: [] }] } },
    },
    webhook: "weft-policy-validator.weft.io",
  });
}
