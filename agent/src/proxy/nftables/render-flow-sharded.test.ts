/**
 * render-flow.test.ts's packet flows in the sharded layout (NftablesRenderOptions.shards: 4): the same flows must
 * end the same way as in kube-proxy's one table.
 */
process.env['NODENET_TEST_NFT_SHARDS'] = '4';
await import('./render-flow.test.js');
