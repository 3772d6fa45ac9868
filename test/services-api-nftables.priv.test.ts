/** Services end to end in nftables mode through the API, endpoints on remote nodes across the overlay: see services-suite.ts. Root only. */
import { servicesSuite } from './services-suite.js';

servicesSuite('nftables', 'api');
