/**
 * core/v1 Endpoints through the real kubectl (the one on PATH) against `nodenet control-plane` on loopback: `kubectl
 * get ep` for a Service with Pods (upstream's "A:P,B:P,C:P + N more..." cell), its not-ready addresses, labels and
 * trigger time; the Endpoints gone with its Service; the `kubernetes` Service's Endpoints listing the API server
 * (advertised on a non-loopback address, as an Endpoints may not hold loopback); a bad Endpoints refused with
 * upstream's message. No root needed.
 */
import t from 'tap';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { waitFor } from '../agent/src/testing/wait.js';

// Pods bound to a Node that is never registered: the pod GC must not take them during the test.
const env = testControlPlane(t, 'nn-cp-ep-', { advertiseAddress: '192.0.2.10', orphanPodQuarantineMs: 3_600_000 });
const { kubectl, ok } = env;

const pod = (name: string) => `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}, labels: {app: web}}\nspec: {nodeName: n1, containers: [{name: c, image: none, ports: [{name: http, containerPort: 8080}]}]}\n`;

t.test('kubectl get ep: a Service with Pods, three endpoints then "+ N more..."; not-ready ones apart; gone with the Service', async (t) => {
  const docs = ['apiVersion: v1\nkind: Service\nmetadata: {name: web, labels: {tier: front}}\nspec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}\n'];
  for (let i = 1; i <= 6; i++) docs.push(pod(`web-${i}`));
  await ok(['apply', '-f', '-'], { input: docs.join('---\n') });
  for (let i = 1; i <= 6; i++) {
    const status = { phase: 'Running', podIP: `10.244.1.${i + 1}`, conditions: [{ type: 'Ready', status: i === 6 ? 'False' : 'True' }] };
    await ok(['patch', 'pod', `web-${i}`, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
  }
  let row = '';
  await waitFor(async () => /\+ 2 more/.test(row = (await ok(['get', 'ep', 'web', '--no-headers'])).trim()), 'five ready endpoints', { intervalMs: 200 });
  t.match(row, /^web\s+10\.244\.1\.2:8080,10\.244\.1\.3:8080,10\.244\.1\.4:8080 \+ 2 more\.\.\.\s+\d+s$/, `kubectl get ep: ${row}`);
  t.match(await ok(['get', 'endpoints']), /^NAME\s+ENDPOINTS\s+AGE$/m, 'the header');
  t.equal(await ok(['get', 'ep', 'web', '-o', 'jsonpath={.subsets[0].notReadyAddresses[*].ip}']), '10.244.1.7', 'the Pod that is not ready');
  t.equal(await ok(['get', 'ep', 'web', '-o', 'jsonpath={.subsets[0].addresses[0].targetRef.name} {.subsets[0].addresses[0].nodeName} {.subsets[0].ports[0].name}/{.subsets[0].ports[0].port}']), 'web-1 n1 http/8080');
  t.equal(await ok(['get', 'ep', 'web', '-o', 'jsonpath={.metadata.labels.tier} {.metadata.labels.endpoints\\.kubernetes\\.io/managed-by}']), 'front endpoint-controller');
  t.match(await ok(['get', 'ep', 'web', '-o', 'jsonpath={.metadata.annotations.endpoints\\.kubernetes\\.io/last-change-trigger-time}']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  t.equal(await ok(['get', 'ep', 'web', '-o', 'jsonpath={.metadata.ownerReferences}']), '', 'no owner, as upstream');

  await ok(['delete', 'pod', 'web-2', 'web-3', 'web-4', 'web-5']);
  await waitFor(async () => (row = (await ok(['get', 'ep', 'web', '--no-headers'])).trim()) !== '' && /^web\s+10\.244\.1\.2:8080\s/.test(row), 'one ready endpoint left', { intervalMs: 200 });
  t.match(row, /^web\s+10\.244\.1\.2:8080\s+\d+s$/);
  await ok(['delete', 'svc', 'web']);
  await waitFor(async () => (await kubectl(['get', 'ep', 'web'])).code !== 0, 'the Endpoints gone with the Service', { intervalMs: 200 });
  t.match((await kubectl(['get', 'ep', 'web'])).err, /endpoints "web" not found/);
});

t.test('kubectl get ep kubernetes: the API server, at its advertised address and port', async (t) => {
  const port = new URL(env.cp.url).port;
  let row = '';
  await waitFor(async () => (row = (await ok(['get', 'ep', 'kubernetes', '--no-headers'])).trim()).includes('192.0.2.10'), 'the API server listed', { intervalMs: 200 });
  t.match(row, new RegExp(`^kubernetes\\s+192\\.0\\.2\\.10:${port}\\s+\\S+$`), `kubectl get ep kubernetes: ${row}`);
  t.equal(await ok(['get', 'ep', 'kubernetes', '-o', 'jsonpath={.subsets[0].ports[0].name}']), 'https');
});

t.test('a bad Endpoints: upstream\'s 422 through kubectl', async (t) => {
  const r = await kubectl(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Endpoints\nmetadata: {name: bad}\nsubsets: [{addresses: [{ip: 127.0.0.1}], ports: [{port: 80}, {port: 81}]}]\n' });
  t.not(r.code, 0);
  t.match(r.err, /The Endpoints "bad" is invalid: \n?\* subsets\[0\]\.addresses\[0\]\.ip: Invalid value: "127\.0\.0\.1": may not be in the loopback range/);
  t.match(r.err, /subsets\[0\]\.ports\[0\]\.name: Required value/);
  t.equal((await kubectl(['get', 'ep', 'bad'])).code, 1, 'nothing stored');
});
