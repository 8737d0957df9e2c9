//! [`Lease`]: one lease of a semaphore.

use std::future::Future;

use bytes::Bytes;
use std::sync::Arc;

use recipe_mutex::Loss;
use recipe_mutex::layer::driver::{self, Acquired};
use recipe_mutex::layer::hold::{HoldMeter, NodeLife, NodeWatch, watch_node};

use crate::Error;
use zk_client::Client;

/// One lease of an [`InterProcessSemaphoreV2`](crate::InterProcessSemaphoreV2): its node
/// `<path>/leases/_c_<uuid>-lease-<seq>`.
///
/// Dropping it returns the lease in the background, even off the runtime (the delete then runs
/// on the runtime the lease was taken on); [`Lease::release`] returns it now and reports
/// errors. Either way the delete, once started, is retried across connection loss until done
/// or the session ends. Any task or thread may release it: the lease is the ownership.
///
/// [`Lease::is_valid`] and [`Lease::lost`] are advisory (what this process knows of its
/// session, and of its node: a watch on it tells of a delete by anyone else); the fence is
/// [`Lease::fencing_token`] or [`Lease::check_op`].
///
/// # Examples
///
/// ```no_run
/// use recipe_semaphore::InterProcessSemaphoreV2;
///
/// # async fn f(client: zk_client::Client) -> Result<(), recipe_semaphore::Error> {
/// let pool = InterProcessSemaphoreV2::new(client.clone(), "/app/pools/db", 3)?;
/// let lease = pool.acquire().await?;
/// // A write fenced by the lease: it commits only while the lease node exists.
/// let ops = [lease.check_op(), zk_client::Op::set_data("/app/pools/db/owner", "me", None)];
/// client.multi(&ops).await?;
/// // Returned from another task: the lease is the ownership.
/// tokio::spawn(lease.release()).await.expect("returned")?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Lease {
    client: Client,
    node: Acquired,
    /// Whether the node was seen gone, and the watch that tells (ended with the lease).
    life: Arc<NodeLife>,
    _watch: NodeWatch,
    /// Its hold time and losses, for the metrics (feature `metrics`; else nothing).
    meter: HoldMeter,
    /// The runtime the lease was taken on: where its return runs, wherever it is dropped.
    runtime: Option<tokio::runtime::Handle>,
    returned: bool,
}

impl Lease {
    pub(crate) fn new(client: Client, node: Acquired) -> Self {
        let (life, watch) = watch_node(&client, &node, None);
        let meter = HoldMeter::start(&client, &life, &node);
        Self {
            client,
            node,
            life,
            _watch: watch,
            meter,
            runtime: tokio::runtime::Handle::try_current().ok(),
            returned: false,
        }
    }

    /// The lease node's path.
    pub fn node_path(&self) -> &str {
        &self.node.path
    }

    /// The lease node's creation zxid. For a semaphore of one (a semaphore mutex) it strictly
    /// increases across successive holders; with more leases it orders a lease against those
    /// that were returned before it was taken.
    pub fn fencing_token(&self) -> i64 {
        self.node.czxid
    }

    /// The lease node's data (Curator's `Lease.getData()`), read from the server.
    pub async fn data(&self) -> Result<Bytes, Error> {
        Ok(self.client.get_data(&*self.node.path).await?.0)
    }

    /// A `multi` op that holds only while our lease node exists.
    pub fn check_op(&self) -> zk_client::Op {
        zk_client::Op::Check {
            path: self.node.path.to_string(),
            version: None,
        }
    }

    /// This lease's [`Sequencer`](crate::Sequencer): its node, czxid and session in a stable
    /// text form (`to_string()`), for a service outside ZooKeeper that fences without
    /// trusting the caller. The service checks it with any client
    /// ([`Sequencer::check`](crate::Sequencer::check)): the node still there, that session's
    /// and that creation's, and not a lease that may still be waiting for its count (its
    /// session holding the semaphore's inner lock since before it).
    ///
    /// ```no_run
    /// # async fn f(pool: recipe_semaphore::InterProcessSemaphoreV2, service: zk_client::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let lease = pool.acquire().await?;
    /// let text = lease.sequencer().to_string(); // sent along with the work
    ///
    /// // In the service:
    /// let sequencer: recipe_semaphore::Sequencer = text.parse()?;
    /// assert!(sequencer.check(&service).await?.is_valid());
    /// # Ok(()) }
    /// ```
    pub fn sequencer(&self) -> crate::Sequencer {
        self.node.sequencer(recipe_mutex::NodeKind::Lease)
    }

    /// Whether the lease is surely still ours as far as this process knows: the session that
    /// took it is connected to a read-write server, and its node was not seen gone.
    pub fn is_valid(&self) -> bool {
        self.life.is_valid(&self.client, &self.node)
    }

    /// Resolves when the lease can no longer be trusted (see `Hold::lost`):
    /// [`Loss::Deleted`] when its node was deleted while the session lives.
    pub async fn lost(&self) -> Loss {
        self.life.lost(&self.client).await
    }

    /// Returns the lease now: the delete is sent when this is called (so that several
    /// returns started together travel in one flight), and the future reports how it ended.
    /// The delete, once started, finishes in the background even if the future is dropped. On
    /// a session already ended, returns that at once: the lease went with it.
    pub fn release(mut self) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        self.returned = true;
        self.meter.end();
        let delete = driver::guaranteed_delete_on(
            self.runtime.as_ref(),
            &self.client,
            self.node.path.clone(),
            |_| {},
        );
        let client = self.client.clone();
        async move { Ok(driver::finish_release(&client, delete).await?) }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.returned {
            self.meter.end();
            // Goes on in the background, on the lease's runtime.
            drop(driver::guaranteed_delete_on(
                self.runtime.as_ref(),
                &self.client,
                self.node.path.clone(),
                |_| {},
            ));
        }
    }
}
