import net from 'node:net';

/** One SMTP reply: its code and its text lines joined. */
export interface SmtpAnswer {
  code: number;
  text: string;
}

/**
 * A raw SMTP conversation, for what a well-behaved client library will not say (quoted local
 * parts, IP literals, source routes, a DATA larger than SIZE allows).
 */
export class SmtpDialog {
  private buffer = '';
  private readonly waiting: Array<(answer: SmtpAnswer) => void> = [];
  private readonly answers: SmtpAnswer[] = [];
  private lines: string[] = [];

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf('\r\n')) >= 0) {
        const line = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        this.lines.push(line.slice(4));
        if (line[3] !== '-') {
          const answer = { code: Number(line.slice(0, 3)), text: this.lines.join('\n') };
          this.lines = [];
          const waiter = this.waiting.shift();
          if (waiter) waiter(answer);
          else this.answers.push(answer);
        }
      }
    });
  }

  static async open(port: number): Promise<{ dialog: SmtpDialog; banner: SmtpAnswer }> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const dialog = new SmtpDialog(socket);
    return { dialog, banner: await dialog.next() };
  }

  next(): Promise<SmtpAnswer> {
    const ready = this.answers.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  async say(line: string): Promise<SmtpAnswer> {
    this.socket.write(`${line}\r\n`);
    return this.next();
  }

  /** Sends DATA, the message (dot-stuffed here) and the final dot; answers DATA's reply and the final one. */
  async data(message: string | Buffer): Promise<{ data: SmtpAnswer; final: SmtpAnswer | null }> {
    const data = await this.say('DATA');
    if (data.code !== 354) return { data, final: null };
    const text = (Buffer.isBuffer(message) ? message.toString('latin1') : message).replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
    this.socket.write(text.endsWith('\r\n') ? text : `${text}\r\n`);
    this.socket.write('.\r\n');
    return { data, final: await this.next() };
  }

  close(): void {
    this.socket.end('QUIT\r\n');
    this.socket.destroy();
  }
}

/** One message through a raw dialog: the replies to each command. */
export async function converse(port: number, commands: string[]): Promise<SmtpAnswer[]> {
  const { dialog } = await SmtpDialog.open(port);
  try {
    const answers: SmtpAnswer[] = [];
    for (const command of commands) answers.push(await dialog.say(command));
    return answers;
  } finally {
    dialog.close();
  }
}
