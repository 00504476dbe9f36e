"""The clickable case report (`rag-ttc report`): a pure page model (`model`), the store reader (`collect`), and a
self-contained HTML renderer (`html`, with `page.js` and `page.css`)."""
