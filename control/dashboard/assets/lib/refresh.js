// Periodic refresh of a page part while it is shown: not while the tab is hidden, not while the previous
// refresh is still out, and not while the keyboard focus is inside the part (replacing it would drop the focus).

export function every(ms, signal, container, fn) {
  let busy = false;
  const id = setInterval(async () => {
    if (busy || signal.aborted || document.hidden || container.contains(document.activeElement)) return;
    busy = true;
    try {
      await fn();
    } finally {
      busy = false;
    }
  }, ms);
  signal.addEventListener("abort", () => clearInterval(id), { once: true });
}
