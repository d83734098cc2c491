//! A panic in the page ends the page as a failed run, with its message.
//!
//! Without a hook a Rust panic in WebAssembly is an `unreachable` trap with no message,
//! and a panic inside a callback the browser runs (a GPU map, a timer) leaves `run()`'s
//! promise pending forever: the test script then waits out its whole timeout and reports
//! only that the page did not finish. The hook writes the message to the console and
//! into the page as a failed check, and sets the title the script polls to a finished
//! state, so a panic fails the run within seconds and names itself.

use std::panic::PanicHookInfo;

/// Installs the hook (once per page; a second call replaces it with the same one).
pub fn install() {
    std::panic::set_hook(Box::new(report));
}

/// The hook: console, the checks list, the summary and the title.
fn report(info: &PanicHookInfo<'_>) {
    let message = format!("panicked: {info}");
    web_sys::console::error_1(&message.as_str().into());
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    // Best effort throughout: a hook must not panic, and the console already has the text.
    if let Some(list) = doc.get_element_by_id("checks")
        && let Ok(item) = doc.create_element("li")
    {
        item.set_class_name("fail");
        item.set_text_content(Some(&format!("FAIL {message}")));
        let _ = list.append_child(&item);
    }
    if let Some(summary) = doc.get_element_by_id("summary") {
        summary.set_text_content(Some("0 passed, 1 failed (a panic)"));
    }
    doc.set_title("tang web: 0 passed, 1 failed (a panic)");
}
