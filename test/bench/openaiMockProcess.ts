import { startOpenAiMock } from '../helpers/openaiMock.ts';

// The fake provider in a process of its own, so a bench's client and the provider do not share one
// event loop: prints `{ baseUrl, apiKey }` as one line once it listens, and ends with its stdin.
const mock = await startOpenAiMock();
// A bench makes tens of thousands of calls and reads none of their recordings: they would only grow.
setInterval(() => {
  mock.requests.length = 0;
}, 500).unref();
process.stdout.write(`${JSON.stringify({ baseUrl: mock.baseUrl, apiKey: mock.apiKey })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void mock.close().then(() => process.exit(0));
});
