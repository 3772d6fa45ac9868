/** Services end to end in nftables mode, with real packets: see services-suite.ts. Root only. */
import { servicesSuite } from './services-suite.js';

servicesSuite('nftables');
