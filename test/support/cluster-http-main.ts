/** A cluster worker for test/cluster/cluster-worker-kill.test.ts: answers every request on PORT once it has read its body. */
import http from 'node:http';

http
  .createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  })
  .listen(Number(process.env.PORT));
