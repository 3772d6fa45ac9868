/**
 * node/full-gc: one full, compacting garbage collection, for after a large
 * full sync (ProxyHostDeps.afterLargeFullSync). V8 collects only when it
 * needs to and keeps freed pages a while, so after the render, the script
 * and the netlink batch of a 30,000-Service sync (hundreds of MB, all garbage
 * at its end) the process would sit on them. A plain full GC frees the
 * garbage but leaves the old space fragmented: the pages the sync half
 * emptied stay mapped (30-60 MiB at 30,000 Services, measured with
 * v8.getHeapSpaceStatistics), and whether V8's own heuristics pick them for
 * compaction varies from run to run (RSS after the GC 241-282 MiB over runs
 * of the same case). This one asks V8 to compact every page it can, so the
 * live data moves together and the emptied pages go back to the system
 * (220-250 MiB in the same runs). It pauses the event loop ~0.5 s at 30,000
 * Services; a full sync happens at start, on a failure and once an hour.
 * `gc` is V8's own, exposed for this one use; the compaction flag is V8's
 * and read at each full GC, so it is on for this collection only.
 * Then malloc_trim(3), now and again a moment later: the Buffers it freed (the netlink batches) go back to
 * glibc, which keeps them in its heap once its mmap threshold has grown (netns/libc.ts mallocTrim).
 * bench/proxy-sync measures the RSS after it too, as the agent holds it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { mallocTrim } from '../netns/libc.js';

let gcFn: (() => void) | null = null;

/** When the second malloc_trim runs, after the collection. */
const TRIM_AGAIN_MS = 300;

export function fullGc(): void {
  if (!gcFn) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gcFn();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
  mallocTrim();
  // V8 frees large ArrayBuffer backing stores on a thread of its own, a moment after the collection: trim again
  // once they are back (measured: 15 MiB more of glibc's heap released at 30,000 Services, sharded layout).
  setTimeout(mallocTrim, TRIM_AGAIN_MS).unref();
}
