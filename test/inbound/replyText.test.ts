import EmailReplyParser from 'email-reply-parser';
import { replyText } from '../../services/inbound/receivedEventData';

/** What email-reply-parser itself answers for the whole text: replyText must agree with it. */
const parserAnswer = (text: string) => new EmailReplyParser().read(text).getVisibleText().trim();

const paragraph = (chars: number) => 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(Math.ceil(chars / 57)).slice(0, chars);

describe('the reply of a received message (email.received replyText)', () => {
  it('is the text above the quoted history and the signature, as the parser finds it', () => {
    const text = 'Thanks, that works.\n\nBest regards,\nAna\n\nOn Mon, 23 Nov 2026 at 10:00, Support <support@example.com> wrote:\n> Did it work?\n> Yes\n';
    expect(replyText(text)).toBe(parserAnswer(text));
    expect(replyText(text)).toContain('Thanks, that works.');
    expect(replyText(text)).not.toContain('Did it work?');
  });

  it('keeps paragraphs written as one long line, word for word, and still drops the quote below them', () => {
    const long = paragraph(9400);
    const text = `Hello,\n\n${long}   \n\nSecond paragraph.\n${paragraph(2500)}\n\nOn Mon, someone wrote:\n> earlier\n> ${paragraph(3000)}\n`;
    expect(replyText(text)).toBe(parserAnswer(text));
    expect(replyText(text)).toContain(long);
    expect(replyText(text)).not.toContain('earlier');
  });

  it('treats a long quoted line as quoted', () => {
    const text = `My answer is below the quote? No, above.\n\nOn Tue, Bob wrote:\n> ${paragraph(5000)}\n> short\n`;
    expect(replyText(text)).toBe(parserAnswer(text));
    expect(replyText(text)).toBe('My answer is below the quote? No, above.');
  });

  it('leaves text holding the stand-in characters themselves as it was', () => {
    const text = `Odd \uE0000\uE001 characters ${paragraph(1200)}\nand \uE0007\uE001 more\n`;
    expect(replyText(text)).toBe(parserAnswer(text));
  });

  it('is null for a message without text', () => {
    expect(replyText(null)).toBeNull();
    expect(replyText('')).toBeNull();
  });
});
