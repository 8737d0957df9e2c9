//! The planted defects the simulator puts back, one at a time, each switched in the crate it
//! belongs to: recipes-core's machines, recipe-mutex's lock layer, and each recipe crate's own.

/// A defect to put back, named as in the crate that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// recipe-mutex's [`NoRuntimeRetry`](recipe_mutex::plant::Plant::NoRuntimeRetry).
    NoRuntimeRetry,
    /// recipe-mutex's [`TurnIgnoresDeadline`](recipe_mutex::plant::Plant::TurnIgnoresDeadline).
    TurnIgnoresDeadline,
    /// recipe-mutex's [`LostEndsWaiters`](recipe_mutex::plant::Plant::LostEndsWaiters).
    LostEndsWaiters,
    /// recipes-core's hand-off shortcut
    /// ([`set_hand_off_shortcut`](recipes_core::plant::set_hand_off_shortcut)).
    HandOffShortcut,
    /// recipes-core's grant on disconnect
    /// ([`set_grant_on_disconnect`](recipes_core::plant::set_grant_on_disconnect)).
    GrantOnDisconnect,
    /// recipe-rwlock's [`ReadIgnoresWrites`](recipe_rwlock::plant::Plant::ReadIgnoresWrites).
    ReadIgnoresWrites,
    /// recipe-semaphore's
    /// [`SemaphoreOneTooMany`](recipe_semaphore::plant::Plant::SemaphoreOneTooMany).
    SemaphoreOneTooMany,
    /// recipes-core's lease wait shortcut
    /// ([`set_lease_wait_shortcut`](recipes_core::plant::set_lease_wait_shortcut)).
    LeaseWaitShortcut,
    /// recipe-multilock's [`MultiSkipsLast`](recipe_multilock::plant::Plant::MultiSkipsLast).
    MultiSkipsLast,
    /// recipe-mutex's [`CohortDoubleGrant`](recipe_mutex::plant::Plant::CohortDoubleGrant).
    CohortDoubleGrant,
    /// recipe-mutex's [`CohortEarlyRelease`](recipe_mutex::plant::Plant::CohortEarlyRelease).
    CohortEarlyRelease,
    /// recipe-mutex's [`NoNodeWatch`](recipe_mutex::plant::Plant::NoNodeWatch).
    NoNodeWatch,
}

/// Puts `plant` back in its crate and clears every other (`None`: no defect anywhere). The
/// switches are the process's.
pub fn set(plant: Option<Plant>) {
    use recipe_mutex::plant::Plant as Layer;
    recipe_mutex::plant::set(match plant {
        Some(Plant::NoRuntimeRetry) => Some(Layer::NoRuntimeRetry),
        Some(Plant::TurnIgnoresDeadline) => Some(Layer::TurnIgnoresDeadline),
        Some(Plant::LostEndsWaiters) => Some(Layer::LostEndsWaiters),
        Some(Plant::CohortDoubleGrant) => Some(Layer::CohortDoubleGrant),
        Some(Plant::CohortEarlyRelease) => Some(Layer::CohortEarlyRelease),
        Some(Plant::NoNodeWatch) => Some(Layer::NoNodeWatch),
        _ => None,
    });
    recipes_core::plant::set_hand_off_shortcut(plant == Some(Plant::HandOffShortcut));
    recipes_core::plant::set_grant_on_disconnect(plant == Some(Plant::GrantOnDisconnect));
    recipes_core::plant::set_lease_wait_shortcut(plant == Some(Plant::LeaseWaitShortcut));
    recipe_rwlock::plant::set(
        (plant == Some(Plant::ReadIgnoresWrites))
            .then_some(recipe_rwlock::plant::Plant::ReadIgnoresWrites),
    );
    recipe_semaphore::plant::set(
        (plant == Some(Plant::SemaphoreOneTooMany))
            .then_some(recipe_semaphore::plant::Plant::SemaphoreOneTooMany),
    );
    recipe_multilock::plant::set(
        (plant == Some(Plant::MultiSkipsLast))
            .then_some(recipe_multilock::plant::Plant::MultiSkipsLast),
    );
}
