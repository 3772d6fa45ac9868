/**
 * A LoadBalancer Service through the real kubectl (the one on PATH) against
 * `nodenet control-plane` on loopback with a load-balancer IP pool: its
 * EXTERNAL-IP comes from the pool, PORT(S) shows its NodePort, and with
 * externalTrafficPolicy Local it has a healthCheckNodePort. No root needed.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { waitFor } from '../agent/src/testing/wait.js';

const env = testControlPlane(t, 'nn-cp-lb-', { nodePortRange: { from: 30000, to: 30099 }, loadBalancerPool: '192.0.2.240/29' });
const { dir, kubectl, ok } = env;

const LB = `apiVersion: v1
kind: Service
metadata:
  name: edge
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: edge}
  ports:
  - {name: http, port: 80, targetPort: 8080}
`;

t.test('kubectl apply a LoadBalancer with externalTrafficPolicy Local: EXTERNAL-IP from the pool, its NodePort, a healthCheckNodePort', async (t) => {
  const file = join(dir, 'lb.yaml');
  writeFileSync(file, LB);
  t.match(await ok(['apply', '-f', file]), /service\/edge created/);
  let row = '';
  await waitFor(async () => {
    row = (await ok(['get', 'svc', 'edge', '--no-headers'])).trim();
    return !row.includes('<pending>');
  }, 'an EXTERNAL-IP for edge', { intervalMs: 200 });
  const m = /^edge\s+LoadBalancer\s+(\S+)\s+(\S+)\s+80:(\d+)\/TCP\s+\S+$/.exec(row);
  t.ok(m, `kubectl get svc: ${row}`);
  const [, clusterIP, externalIP, nodePort] = m ?? [];
  t.match(clusterIP, /^10\.(9[6-9]|1[01]\d)\./, 'a ClusterIP from the service CIDR');
  t.equal(externalIP, '192.0.2.241', 'the first usable address of the pool');
  t.ok(Number(nodePort) >= 30000 && Number(nodePort) <= 30099, `a NodePort in range (${nodePort})`);
  const hc = await ok(['get', 'svc', 'edge', '-o', 'jsonpath={.spec.healthCheckNodePort}']);
  t.match(hc, /^300\d\d$/, `healthCheckNodePort set (${hc})`);
  t.not(hc, nodePort, 'and not the NodePort');
  t.equal(await ok(['get', 'svc', 'edge', '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}']), '192.0.2.241');
  await waitFor(async () => /IPAllocated\s+.*Assigned IP \["192\.0\.2\.241"\]/.test(await ok(['get', 'events', '--field-selector', 'involvedObject.name=edge'])), 'the IPAllocated Event', { intervalMs: 200 });
  t.pass('kubectl get events shows IPAllocated');

  // externalTrafficPolicy Cluster: the healthCheckNodePort goes; the address stays.
  await ok(['patch', 'svc', 'edge', '--type', 'merge', '-p', '{"spec":{"externalTrafficPolicy":"Cluster"}}']);
  t.equal(await ok(['get', 'svc', 'edge', '-o', 'jsonpath={.spec.healthCheckNodePort}']), '');
  t.equal(await ok(['get', 'svc', 'edge', '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}']), '192.0.2.241');
});

t.test('a requested healthCheckNodePort that is taken: kubectl shows the 422 naming the field', async (t) => {
  const used = await ok(['get', 'svc', 'edge', '-o', 'jsonpath={.spec.ports[0].nodePort}']);
  const file = join(dir, 'clash.yaml');
  writeFileSync(file, LB.replace('name: edge', 'name: clash').replace('externalTrafficPolicy: Local', `externalTrafficPolicy: Local\n  healthCheckNodePort: ${used}`));
  const r = await kubectl(['apply', '-f', file]);
  t.not(r.code, 0);
  t.match(r.err, new RegExp(`The Service "clash" is invalid: spec\\.healthCheckNodePort: Invalid value: ${used}: provided port is already allocated`));
});
