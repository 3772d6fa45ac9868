/** Services end to end through the API on the HA control plane (3 etcd members, 2 API servers behind HAProxy): see services-suite.ts. Root only. */
import { servicesSuite } from './services-suite.js';

servicesSuite('iptables', 'api-ha');
