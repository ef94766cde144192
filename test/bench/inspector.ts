/**
 * Full garbage collections in a child process started with `--inspect=127.0.0.1:<port>`, through the
 * DevTools protocol (Node's built-in WebSocket client): memory per item is measured on what is
 * retained, not on garbage a collection has not reached yet, whose amount depends on when V8 last
 * ran one.
 */
export async function collectGarbage(inspectPort: number): Promise<void> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const socket = new WebSocket(targets[0]!.webSocketDebuggerUrl);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.onopen = () => resolve();
      socket.onerror = () => reject(new Error('inspector connection failed'));
    });
    // Twice: the first collection's finalizers can free more for the second.
    for (const id of [1, 2]) {
      await new Promise<void>((resolve) => {
        socket.onmessage = (message) => {
          if ((JSON.parse(String(message.data)) as { id?: number }).id === id) resolve();
        };
        socket.send(JSON.stringify({ id, method: 'HeapProfiler.collectGarbage' }));
      });
    }
  } finally {
    socket.close();
  }
}
