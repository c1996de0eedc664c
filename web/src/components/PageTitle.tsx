/** The document's title for the page shown (React puts it in <head>): "Overview · Newsletter · Mailroom". */
export function PageTitle({ parts }: { parts: string[] }) {
  return <title>{[...parts, 'Mailroom'].join(' · ')}</title>;
}
