import t from 'tap';
import { ep, svc } from '../test-fixtures.js';
import { endpointString } from '../types.js';
import { categorizeSorted, sortEndpoints } from './endpoints.js';

const names = (eps: readonly Parameters<typeof endpointString>[0][]): string[] => eps.map(endpointString);

t.test('sortEndpoints: numeric IP order, then port; input untouched', async (t) => {
  const eps = [ep('10.180.0.10:80'), ep('10.180.0.2:8080'), ep('10.180.0.2:80'), ep('9.0.0.1:80')];
  t.same(names(sortEndpoints(eps)), ['9.0.0.1:80', '10.180.0.2:80', '10.180.0.2:8080', '10.180.0.10:80']);
  t.same(names(eps), ['10.180.0.10:80', '10.180.0.2:8080', '10.180.0.2:80', '9.0.0.1:80']);
});

t.test('categorizeSorted: every list sorted, the merged union included', async (t) => {
  // Ready elsewhere, only terminating here: the shared union is Cluster then Local; nftables sorts it.
  const s = svc('ns', 'a', '172.30.0.41', { nodePort: 30001, etp: 'Local' });
  const terminating = { ready: false, serving: true, terminating: true, local: true } as const;
  const c = categorizeSorted(s, [ep('10.180.0.10:80'), ep('10.180.0.1:80', terminating), ep('10.180.0.3:80')]);
  t.same(names(c.cluster), ['10.180.0.3:80', '10.180.0.10:80']);
  t.same(names(c.local), ['10.180.0.1:80']);
  t.same(names(c.allReachable), ['10.180.0.1:80', '10.180.0.3:80', '10.180.0.10:80']);
  t.equal(c.hasAny, true);
});
