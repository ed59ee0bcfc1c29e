//! A webhook receiver: the smallest HTTP server that takes hiscore's
//! deliveries (one `POST` with a `Content-Length` body per connection),
//! records each with the time it came, checks its `Hiscore-Signature`, and
//! answers as told (2xx, a refusal, or nothing until released), so a run
//! or a test sees what a studio's server would.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The largest delivery read (hiscore's events are a few KiB).
const MAX_REQUEST_BYTES: usize = 1 << 20;

/// One delivery as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// `Hiscore-Delivery`.
    pub id: String,
    /// `Hiscore-Event`.
    pub event: String,
    /// The raw body.
    pub body: String,
    /// `Hiscore-Signature`.
    pub signature: String,
    pub at: SystemTime,
    /// Whether the signature verifies with the secret set, if one is.
    pub verified: Option<bool>,
    /// The status it was answered with.
    pub answered: u16,
}

impl Received {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_default()
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    secret: Option<String>,
    /// Answer this many deliveries with 500 before taking any.
    refuse: usize,
}

/// A receiver listening on 127.0.0.1; stops when dropped.
pub struct Receiver {
    address: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    /// `true` while answers are held back (a receiver that hangs).
    holding: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(0).await
    }

    /// On a given port (a test restarts a receiver where a webhook points).
    pub async fn start_on(port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        let inner = Arc::new(Mutex::new(Inner::default()));
        let (holding, held) = watch::channel(false);
        let shared = Arc::clone(&inner);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared), held.clone()));
            }
        });
        Ok(Self { address, inner, holding, task })
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks", self.address)
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// Checks every signature from now on against `secret`.
    pub fn set_secret(&self, secret: &str) {
        self.lock().secret = Some(secret.to_owned());
    }

    /// Answers the next `count` deliveries with 500.
    pub fn refuse_next(&self, count: usize) {
        self.lock().refuse = count;
    }

    /// Holds every answer back until [`Receiver::release`] (a hung receiver).
    pub fn hold(&self) {
        self.holding.send_replace(true);
    }

    pub fn release(&self) {
        self.holding.send_replace(false);
    }

    /// Everything received so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, inner: Arc<Mutex<Inner>>, mut held: watch::Receiver<bool>) {
    let Some((headers, body)) = read_request(&mut stream).await else { return };
    let header = |name: &str| headers.get(name).cloned().unwrap_or_default();
    let status = {
        let mut inner = inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let signature = header("hiscore-signature");
        let verified = inner.secret.as_deref().map(|secret| verify(secret, &signature, &body));
        let answered = if inner.refuse > 0 {
            inner.refuse -= 1;
            500
        } else {
            200
        };
        inner.received.push(Received {
            id: header("hiscore-delivery"),
            event: header("hiscore-event"),
            body,
            signature,
            at: SystemTime::now(),
            verified,
            answered,
        });
        answered
    };
    // A hung receiver: no answer while held (the sender's timeout ends it).
    let _ = held.wait_for(|holding| !holding).await;
    let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let _ = stream.write_all(reply.as_bytes()).await;
}

/// The request's headers (lower-cased names) and its body.
async fn read_request(stream: &mut TcpStream) -> Option<(HashMap<String, String>, String)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 || buffer.len() > MAX_REQUEST_BYTES {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break end;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 || body.len() > MAX_REQUEST_BYTES {
            return None;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Some((headers, String::from_utf8_lossy(&body).into_owned()))
}

/// Whether `header` (`t=<seconds>,v1=<hex>`) signs `body` with `secret`.
pub fn verify(secret: &str, header: &str, body: &str) -> bool {
    let mut timestamp = None;
    let mut digest = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => timestamp = Some(value),
            Some(("v1", value)) => digest = Some(value),
            _ => {}
        }
    }
    let (Some(timestamp), Some(digest)) = (timestamp, digest) else { return false };
    let Some(expected) = hex(digest) else { return false };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else { return false };
    mac.update(format!("{timestamp}.{body}").as_bytes());
    mac.verify_slice(&expected).is_ok()
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_a_known_signature_and_nothing_else() {
        // echo -n '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        let header = "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789";
        assert!(verify("whsec_test", header, r#"{"a":1}"#));
        assert!(!verify("whsec_other", header, r#"{"a":1}"#));
        assert!(!verify("whsec_test", header, r#"{"a":2}"#));
        assert!(!verify(
            "whsec_test",
            "t=1700000001,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789",
            r#"{"a":1}"#
        ));
        assert!(!verify("whsec_test", "garbage", r#"{"a":1}"#));
    }
}
