/**
 * node/full-gc: one full garbage collection, for after a large full sync
 * (ProxyHostDeps.afterLargeFullSync). V8 collects only when it needs to and
 * keeps freed pages a while, so after the render, the script and the netlink
 * batch of a 30,000-Service sync (hundreds of MB, all garbage at its end) the
 * process would sit on them. `gc` is V8's own, exposed for this one use.
 * bench/proxy-sync measures the RSS after it too, as the agent holds it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gcFn: (() => void) | null = null;

export function fullGc(): void {
  if (!gcFn) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
}
