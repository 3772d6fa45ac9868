/** Services end to end in iptables mode, with real packets: see services-suite.ts. Root only. */
import { servicesSuite } from './services-suite.js';

servicesSuite('iptables');
