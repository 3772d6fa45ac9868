/** The HA demo's pure parts: the write stream as a timeline, the longest pause in it, and step 5's Deployment. */
import t from 'tap';
import { electorDeployment, writeTimeline } from './demo-ha.js';

t.test('writeTimeline: a bar of half seconds with writes, and the longest pause between two', async (t) => {
  const tl = writeTimeline([100, 300, 700, 2600, 2700], 0, 3000);
  t.equal(tl.bar, '##...#');
  t.equal(tl.longestGapMs, 1900);
  t.same(writeTimeline([], 0, 1000), { bar: '..', longestGapMs: 0 });
  t.equal(writeTimeline([5000], 0, 1000).bar, '.#', 'a late write counts in the last bucket');
});

t.test('electorDeployment: 3 replicas, never two on one node (required anti-affinity on the hostname)', async (t) => {
  const d = electorDeployment('/x/nodenet.js') as { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: { affinity: unknown; containers: { command: string[] }[] } } } };
  t.equal(d.spec.replicas, 3, 'more replicas than the demo\'s 2 nodes: one stays Pending');
  t.same(d.spec.template.spec.affinity, { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'elector' } }, topologyKey: 'kubernetes.io/hostname' }] } });
  t.same(d.spec.template.metadata.labels, d.spec.selector.matchLabels, 'the term selects the Deployment\'s own Pods');
  t.same(d.spec.template.spec.containers[0]!.command.slice(1), ['/x/nodenet.js', 'serve', '--http', '8080', '--tcp', '', '--udp', '', '--leader-elect', 'elector']);
});
