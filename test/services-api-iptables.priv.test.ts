/** Services end to end in iptables mode through the API, endpoints on remote nodes across the overlay: see services-suite.ts. Root only. */
import { servicesSuite } from './services-suite.js';

servicesSuite('iptables', 'api');
