// Follows a database operation (patch by query...) through `/operations/state` until it ends, reporting
// its progress on the way.

import * as api from "./api.js";

/** How often an operation's state is read. */
const POLL_MS = 250;

/** Progress as a fraction in 0..1, or null when the total is not known yet. */
export function progressFraction(state) {
  const p = state && state.Progress;
  if (!p || !p.Total) return null;
  return Math.min(1, (p.Processed || 0) / p.Total);
}

/** Resolves to the final state (`Completed`, `Faulted`, `Canceled`); `onState` sees every state read. */
export async function watchOperation(database, id, onState) {
  for (;;) {
    const state = await api.operationState(database, id);
    onState(state);
    if (state && state.Status !== "InProgress") return state;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
