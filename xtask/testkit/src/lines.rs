//! [`lines`]: a child process's output, line by line, on a channel a test or harness can read
//! with a deadline (`recv_timeout`).

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::thread;

/// Reads `from` line by line on a thread of its own and sends each line; the channel ends
/// with the output (or at the first read error) or when the receiver is dropped.
pub fn lines(from: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_arrive_in_order_and_the_channel_ends_with_the_input() {
        let rx = lines(&b"READY\nRESULT a=1\nno newline"[..]);
        let got: Vec<String> = rx.iter().collect();
        assert_eq!(got, ["READY", "RESULT a=1", "no newline"]);
    }
}
