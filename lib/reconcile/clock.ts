/**
 * reconcile/clock: time as a dependency. Reconcile code takes a Clock and never
 * calls bare setTimeout/Date.now, so tests drive time with FakeClock.
 */
export interface Clock {
  /** Milliseconds, monotonic enough for intervals (wall-clock ms for the real clock). */
  now(): number;
  /** Calls fn once after ms; returns a handle for clearTimeout. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a pending timer; a handle already fired or cleared is ignored. */
  clearTimeout(handle: unknown): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const h = setTimeout(fn, ms);
    // The runner's periodic timer must not keep a CLI process alive on its own.
    h.unref();
    return h;
  },
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};
