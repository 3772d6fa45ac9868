import t from 'tap';
import { describeProblems, expand, imageProblem, planPod, resolveContainer } from './pod-spec.js';

const pod = (spec: Record<string, unknown>) => ({ metadata: { name: 'p' }, spec });
const ctr = (extra: Record<string, unknown> = {}) => ({ name: 'c', image: 'nodenet/host', command: ['sleep', '1'], ...extra });
// What the API server's defaults add to every Pod: accepted, no effect.
const DEFAULTS = { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', terminationGracePeriodSeconds: 30, securityContext: {}, enableServiceLinks: true, tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }] };
const CTR_DEFAULTS = { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'Always', resources: {} };

t.test('a defaulted Pod with honoured fields is planned', async (t) => {
  const r = planPod(pod({ ...DEFAULTS, nodeName: 'n1', restartPolicy: 'OnFailure', containers: [ctr({ ...CTR_DEFAULTS, args: ['x'], workingDir: '/tmp', ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
    env: [{ name: 'A', value: 'a' }, { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
    readinessProbe: { httpGet: { port: 'http', path: '/ready' }, periodSeconds: 2, successThreshold: 2 },
    livenessProbe: { tcpSocket: { port: 8080 } }, startupProbe: { exec: { command: ['true'] }, failureThreshold: 30 } })] }));
  t.ok(r.ok);
  if (!r.ok) return;
  t.equal(r.plan.restartPolicy, 'OnFailure');
  t.equal(r.plan.terminationGracePeriodSeconds, 30);
  const c = r.plan.containers[0]!;
  t.same(c.command, ['sleep', '1']);
  t.same(c.args, ['x']);
  t.equal(c.workingDir, '/tmp');
  t.same(c.env, [{ name: 'A', value: 'a' }, { name: 'IP', fieldRef: 'status.podIP' }]);
  t.match(c.readiness, { action: { kind: 'httpGet', port: 8080, path: '/ready', scheme: 'HTTP' }, periodSeconds: 2, successThreshold: 2, failureThreshold: 3, timeoutSeconds: 1, initialDelaySeconds: 0 });
  t.match(c.liveness, { action: { kind: 'tcpSocket', port: 8080, host: '' }, periodSeconds: 10 });
  t.match(c.startup, { action: { kind: 'exec', command: ['true'] }, failureThreshold: 30 });
});

t.test('every field nodenet cannot honour is named', async (t) => {
  const r = planPod(pod({
    ...DEFAULTS, hostNetwork: true, hostPID: true, volumes: [{ name: 'v', emptyDir: {} }], initContainers: [ctr()], securityContext: { runAsUser: 1000 },
    containers: [ctr({ command: undefined, volumeMounts: [{ name: 'v', mountPath: '/v' }], resources: { limits: { cpu: '1' } }, lifecycle: { preStop: { exec: { command: ['x'] } } }, ports: [{ containerPort: 80, hostPort: 80 }], securityContext: { privileged: true },
      env: [{ name: 'S', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }, { name: 'F', valueFrom: { fieldRef: { fieldPath: 'metadata.labels' } } }], livenessProbe: { grpc: { port: 1 } } })],
  }));
  t.notOk(r.ok);
  if (r.ok) return;
  const fields = r.problems.map((p) => p.field).sort();
  t.same(fields, [
    'spec.containers[0].command', 'spec.containers[0].env[0].valueFrom.secretKeyRef', 'spec.containers[0].env[1].valueFrom.fieldRef.fieldPath', 'spec.containers[0].lifecycle',
    'spec.containers[0].livenessProbe.grpc', 'spec.containers[0].ports[0].hostPort', 'spec.containers[0].resources.limits', 'spec.containers[0].securityContext.privileged',
    'spec.containers[0].volumeMounts', 'spec.hostNetwork', 'spec.hostPID', 'spec.initContainers', 'spec.securityContext.runAsUser', 'spec.volumes',
  ]);
  t.match(describeProblems(r.problems), /^nodenet cannot run this Pod: .*spec\.volumes: nodenet runs processes on the node's filesystem/);
});

t.test('images: only nodenet/host; others never pull', async (t) => {
  t.equal(imageProblem('nodenet/host'), null);
  t.equal(imageProblem('nodenet/host:latest'), null);
  t.match(imageProblem('busybox:1.36'), { reason: 'ErrImageNeverPull', message: /cannot pull images; use image nodenet\/host/ });
});

t.test('$(VAR) expansion and the environment, in order', async (t) => {
  const vars = new Map([['A', 'x']]);
  t.equal(expand('$(A)-$(B)-$$(A)-$-$(', vars), 'x-$(B)-$(A)-$-$(');
  const r = planPod(pod({ containers: [ctr({ command: ['echo', '$(GREETING)'], args: ['$(NAME)'], env: [{ name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }, { name: 'GREETING', value: 'hi-$(NAME)-$(LATER)' }, { name: 'LATER', value: 'l' }] })] }));
  if (!r.ok) return t.fail('planned');
  const { env, argv } = resolveContainer(r.plan.containers[0]!, { 'metadata.name': 'p', 'metadata.namespace': 'ns', 'metadata.uid': 'u', 'spec.nodeName': 'n1', 'status.podIP': '10.0.0.2', 'status.hostIP': '192.168.0.1' }, 'p');
  t.equal(env['NAME'], 'p');
  t.equal(env['GREETING'], 'hi-p-$(LATER)', 'a variable defined later is not expanded');
  t.equal(env['HOSTNAME'], 'p');
  t.match(env['PATH'], /\/usr\/bin/);
  t.same(argv, ['echo', 'hi-p-$(LATER)', 'p']);
});
