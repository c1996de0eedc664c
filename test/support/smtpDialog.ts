import net from 'node:net';

export interface SmtpReply {
  code: number;
  /** The whole reply, its lines joined by newlines. */
  text: string;
}

export interface SmtpDialog {
  banner: SmtpReply;
  /** Sends one command line and resolves with its reply. */
  command(line: string): Promise<SmtpReply>;
  /** After a 354: sends the message (dot-stuffed) and the final dot, resolves with the reply to DATA. */
  message(raw: string): Promise<SmtpReply>;
  /** AUTH PLAIN with this user name and password. */
  authPlain(user: string, password: string): Promise<SmtpReply>;
  close(): void;
}

/**
 * A raw SMTP conversation, line by line, for what a well-behaved client library never sends
 * (MAIL before AUTH, a message without From, a header that breaks a line).
 */
export async function smtpDialog(port: number, options: { host?: string; localAddress?: string } = {}): Promise<SmtpDialog> {
  const socket = net.connect({ port, host: options.host ?? '127.0.0.1', localAddress: options.localAddress });
  socket.setEncoding('utf8');
  const waiting: Array<{ resolve: (reply: SmtpReply) => void; reject: (err: Error) => void }> = [];
  const ready: SmtpReply[] = [];
  let buffer = '';
  let lines: string[] = [];
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    for (let at = buffer.indexOf('\r\n'); at >= 0; at = buffer.indexOf('\r\n')) {
      const line = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      lines.push(line);
      if (/^\d{3}(?: |$)/.test(line)) {
        const reply = { code: Number(line.slice(0, 3)), text: lines.join('\n') };
        lines = [];
        const waiter = waiting.shift();
        if (waiter) waiter.resolve(reply);
        else ready.push(reply);
      }
    }
  });
  const failAll = (err: Error) => waiting.splice(0).forEach((w) => w.reject(err));
  socket.on('error', failAll);
  socket.on('close', () => failAll(new Error('connection closed')));
  const next = () =>
    new Promise<SmtpReply>((resolve, reject) => {
      const early = ready.shift();
      if (early) resolve(early);
      else waiting.push({ resolve, reject });
    });
  const command = (line: string) => {
    const reply = next();
    socket.write(`${line}\r\n`);
    return reply;
  };
  const banner = await next();
  await command('EHLO client.test');
  return {
    banner,
    command,
    message(raw) {
      const reply = next();
      const body = raw.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
      socket.write(`${body}${body.endsWith('\r\n') ? '' : '\r\n'}.\r\n`);
      return reply;
    },
    authPlain(user, password) {
      return command(`AUTH PLAIN ${Buffer.from(`\u0000${user}\u0000${password}`).toString('base64')}`);
    },
    close() {
      socket.destroy();
    },
  };
}
