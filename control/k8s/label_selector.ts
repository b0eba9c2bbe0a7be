/** Kubernetes label selector matching, shared by every component that selects pods. */

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelectorLike {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** Whether `selector` selects an object with `labels`. An empty selector selects everything; none selects nothing. */
export function selects(
  selector: LabelSelectorLike | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    if (l[k] !== v) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, req.key);
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
        if (!has || !values.includes(l[req.key])) return false;
        break;
      case "NotIn":
        if (has && values.includes(l[req.key])) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        // An unknown operator selects nothing rather than everything.
        return false;
    }
  }
  return true;
}
