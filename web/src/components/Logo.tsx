/** Mailroom's mark (decorative: the name is always written beside it). */
export function Logo() {
  return (
    <svg className="logo" viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" focusable="false">
      <rect width="32" height="32" rx="7" fill="#3b5bdb" />
      <path d="M7 11.5 16 17l9-5.5V22a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 7 22z" fill="#fff" />
      <path d="M8.5 8.5h15A1.5 1.5 0 0 1 25 10v.2L16 15.7 7 10.2V10a1.5 1.5 0 0 1 1.5-1.5" fill="#dbe4ff" />
    </svg>
  );
}
