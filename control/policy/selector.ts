/** Kubernetes label selectors: matching, specificity (for Server precedence) and validation. */
import type { LabelSelector } from "./resources.ts";

export { selects } from "../k8s/label_selector.ts";

/** How many requirements a selector states; more requirements make a Server more specific. */
export function specificity(selector: LabelSelector | undefined): number {
  if (!selector) return 0;
  return Object.keys(selector.matchLabels ?? {}).length + (selector.matchExpressions ?? []).length;
}

/** Problems with a selector, each naming its field under `path`. */
export function selectorProblems(selector: unknown, path: string): string[] {
  const out: string[] = [];
  if (selector === undefined || selector === null) return out;
  if (typeof selector !== "object" || Array.isArray(selector)) return [`${path}: must be an object`];
  const s = selector as LabelSelector;
  if (s.matchLabels !== undefined) {
    if (typeof s.matchLabels !== "object" || s.matchLabels === null || Array.isArray(s.matchLabels)) {
      out.push(`${path}.matchLabels: must be a map of strings`);
    } else {
      for (const [k, v] of Object.entries(s.matchLabels)) {
        const p = labelKeyProblem(k);
        if (p) out.push(`${path}.matchLabels: key "${k}" ${p}`);
        if (typeof v !== "string" || !LABEL_VALUE.test(v)) {
          out.push(`${path}.matchLabels["${k}"]: "${v}" is not a valid label value`);
        }
      }
    }
  }
  (s.matchExpressions ?? []).forEach((req, i) => {
    const p = `${path}.matchExpressions[${i}]`;
    const kp = labelKeyProblem(req.key ?? "");
    if (kp) out.push(`${p}.key: "${req.key ?? ""}" ${kp}`);
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) out.push(`${p}.values: must be non-empty for operator ${req.operator}`);
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0) out.push(`${p}.values: must be empty for operator ${req.operator}`);
        break;
      default:
        out.push(`${p}.operator: "${req.operator}" is not one of In, NotIn, Exists, DoesNotExist`);
    }
  });
  return out;
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) return "has an invalid prefix";
  }
  if (!LABEL_NAME.test(name)) return "is not a valid label name";
  return undefined;
}

/**
 * Whether two selectors could select the same object. Exact only for the cases admission
 * rejects: identical requirements, or one selector empty (it selects every pod).
 */
export function selectorsOverlap(a: LabelSelector | undefined, b: LabelSelector | undefined): boolean {
  if (!a || !b) return false;
  if (specificity(a) === 0 || specificity(b) === 0) return true;
  return canonical(a) === canonical(b);
}

function canonical(s: LabelSelector): string {
  const labels = Object.entries(s.matchLabels ?? {}).sort(([x], [y]) => x < y ? -1 : x > y ? 1 : 0);
  const exprs = (s.matchExpressions ?? []).map((e) =>
    `${e.key} ${e.operator} ${[...(e.values ?? [])].sort()}`
  )
    .sort();
  return JSON.stringify([labels, exprs]);
}
