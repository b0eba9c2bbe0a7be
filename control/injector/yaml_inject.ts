/**
 * Offline injection of Kubernetes YAML (the `inject` CLI): every Pod and pod template (Deployment,
 * StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, and the items of a List) gets the same patch
 * the webhook would produce, applied to the YAML document itself so comments and key order
 * survive. Documents that cannot be injected are passed through byte for byte, each with a note
 * saying why; an invalid annotation is an error naming it.
 *
 * Offline there is no namespace object: the workload is injected as if its namespace enabled
 * injection, and its own `linkerd.io/inject: disabled` (or a host-network pod, or an existing
 * proxy) still skips it.
 */
import type { V1Namespace, V1ObjectMeta, V1Pod, V1PodSpec } from "@kubernetes/client-node";
import { type Document, isMap, isSeq, parseAllDocuments, type YAMLMap, type YAMLSeq } from "yaml";
import { Annotations } from "../../proto/annotations.ts";
import type { InjectorConfig } from "./config.ts";
import { decide } from "./decision.ts";
import { buildPatch, type JsonPatchOp } from "./patch.ts";

export interface InjectResult {
  /** The YAML to print; empty when there are errors. */
  output: string;
  /** One line per document (or List item) passed through, saying why. */
  notes: string[];
  /** Problems that make the input unacceptable (invalid annotations, YAML syntax). */
  errors: string[];
  injected: number;
}

/** Where the pod template sits in each supported kind. */
export const TEMPLATE_PATHS: Readonly<Record<string, readonly string[]>> = {
  Pod: [],
  Deployment: ["spec", "template"],
  StatefulSet: ["spec", "template"],
  DaemonSet: ["spec", "template"],
  ReplicaSet: ["spec", "template"],
  ReplicationController: ["spec", "template"],
  Job: ["spec", "template"],
  CronJob: ["spec", "jobTemplate", "spec", "template"],
};

type Json = Record<string, unknown>;

function getPath(obj: unknown, path: readonly (string | number)[]): unknown {
  let cur = obj;
  for (const p of path) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Json)[p as string];
  }
  return cur;
}

function unescapeSegment(s: string): string {
  return s.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** Applies `add` operations to the YAML document's nodes under `prefix`. */
function applyToDocument(doc: Document, prefix: (string | number)[], ops: JsonPatchOp[]): void {
  for (const op of ops) {
    if (op.op !== "add") throw new Error(`unsupported patch op ${op.op} at ${op.path}`);
    const parts: (string | number)[] = [...prefix, ...op.path.split("/").slice(1).map(unescapeSegment)];
    const last = parts.pop()!;
    const parent = doc.getIn(parts, true);
    const node = doc.createNode(op.value);
    // A flow collection (`labels: {app: web}`) that grows is printed in block style.
    if (isSeq(parent) || isMap(parent)) (parent as YAMLMap | YAMLSeq).flow = false;
    if (isSeq(parent)) {
      const seq = parent as YAMLSeq;
      if (last === "-") seq.items.push(node);
      else seq.items.splice(Number(last), 0, node);
    } else if (isMap(parent)) (parent as YAMLMap).set(String(last), node);
    else throw new Error(`cannot add ${op.path}: its parent is not in the document`);
  }
}

interface Target {
  /** Path of the pod template (or the pod) inside the document. */
  path: (string | number)[];
  kind: string;
  name: string;
  namespace: string;
  label: string;
}

function targetsOf(js: Json, base: (string | number)[], where: string, notes: string[]): Target[] {
  const kind = typeof js.kind === "string" ? js.kind : "";
  const meta = (js.metadata ?? {}) as V1ObjectMeta;
  const label = `${where} (${kind || "no kind"}${
    meta.name ? ` ${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}` : ""
  })`;
  if (kind === "List" && Array.isArray(js.items)) {
    return js.items.flatMap((item, i) =>
      typeof item === "object" && item !== null
        ? targetsOf(item as Json, [...base, "items", i], `${where} item ${i + 1}`, notes)
        : []
    );
  }
  const path = TEMPLATE_PATHS[kind];
  if (!path) {
    notes.push(`${label}: passed through: kind ${kind || "(none)"} has no pod template`);
    return [];
  }
  const template = getPath(js, path) as { spec?: V1PodSpec } | undefined;
  if (!Array.isArray(template?.spec?.containers)) {
    notes.push(`${label}: passed through: ${[...path, "spec", "containers"].join(".")} is missing`);
    return [];
  }
  return [{
    path: [...base, ...path],
    kind,
    name: meta.name ?? "",
    namespace: meta.namespace ?? "default",
    label,
  }];
}

export async function injectYaml(text: string, cfg: InjectorConfig): Promise<InjectResult> {
  const docs = parseAllDocuments(text);
  const notes: string[] = [];
  const errors: string[] = [];
  const pieces: string[] = [];
  let injected = 0;
  let at = 0;
  for (const [i, doc] of (Array.isArray(docs) ? docs : [docs]).entries()) {
    const where = `document ${i + 1}`;
    // Each piece runs from the end of the previous document, so leading comments stay with it.
    const original = text.slice(at, doc.range[2]);
    at = doc.range[2];
    if (doc.errors.length > 0) {
      errors.push(`${where}: YAML error: ${doc.errors[0].message}`);
      continue;
    }
    const js = doc.toJS() as unknown;
    if (typeof js !== "object" || js === null || Array.isArray(js)) {
      if (js !== null && js !== undefined) notes.push(`${where}: passed through: not a Kubernetes object`);
      pieces.push(original);
      continue;
    }
    const targets = targetsOf(js as Json, [], where, notes);
    let changed = false;
    for (const t of targets) {
      const template = getPath(js, t.path) as { metadata?: V1ObjectMeta; spec: V1PodSpec };
      const pod: V1Pod = {
        metadata: {
          ...template.metadata,
          namespace: t.namespace,
          ...(t.kind !== "Pod"
            ? { ownerReferences: [{ apiVersion: "", kind: t.kind, name: t.name, uid: "", controller: true }] }
            : {}),
        },
        spec: template.spec,
      };
      const ns: V1Namespace = {
        metadata: { name: t.namespace, annotations: { [Annotations.inject]: "enabled" } },
      };
      const decision = decide(pod, ns, cfg.excludedNamespaces);
      if (!decision.inject) {
        if (decision.reason === "invalid_inject_annotation_at_workload") {
          errors.push(`${t.label}: ${decision.message}`);
        } else notes.push(`${t.label}: passed through: ${decision.message}`);
        continue;
      }
      const result = await buildPatch(pod, ns, cfg);
      if (!result.ok) {
        for (const p of result.problems) errors.push(`${t.label}: ${p.message}`);
        continue;
      }
      for (const w of result.warnings) notes.push(`${t.label}: warning: ${w}`);
      // The patch adds to metadata.annotations/labels, so the template needs a metadata map.
      if (!isMap(doc.getIn([...t.path, "metadata"], true))) {
        doc.setIn([...t.path, "metadata"], doc.createNode({}));
      }
      applyToDocument(doc, t.path, result.patch);
      changed = true;
      injected++;
    }
    pieces.push(changed ? doc.toString() : original);
  }
  pieces.push(text.slice(at));
  return { output: errors.length > 0 ? "" : joinPieces(pieces), notes, errors, injected };
}

function joinPieces(pieces: string[]): string {
  let out = "";
  for (const p of pieces) {
    if (p === "") continue;
    if (out !== "" && !out.endsWith("\n")) out += "\n";
    out += p;
  }
  return out;
}
