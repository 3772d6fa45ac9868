/** The proxy driven by the API in iptables mode, with real packets: see cluster-api-suite.ts. Root only. */
import { clusterApiSuite } from './cluster-api-suite.js';

clusterApiSuite('iptables');
